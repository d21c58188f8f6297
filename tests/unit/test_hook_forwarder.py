"""The hook forwarder, run as editors run it (``bash -c``, ``python -I -S``, the payload on
stdin) against an HTTP server holding the endpoint's contract (``/v1/hooks/EDITOR/EVENT``,
a bearer token): it prints the reply, and prints nothing and exits 0 whenever anything is
missing or fails."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from turngraph.producers.hooks import forward as forward_module
from turngraph.producers.hooks.config import (
    FORWARDER,
    FORWARDER_MODULE,
    FORWARDER_STUB,
    forwarder_executable,
    hook_command,
    install_forwarder,
    is_ours,
)
from turngraph.producers.hooks.editors import PROJECT_DIR_VARIABLES

TOKEN = "t0ken-for-tests"
PROMPT_REPLY = {
    "hookSpecificOutput": {
        "hookEventName": "UserPromptSubmit",
        "additionalContext": "<memory>Postgres 16</memory>",
    }
}


@dataclass
class Endpoint:
    url: str
    received: list[tuple[str, str | None, bytes]] = field(default_factory=list)
    project_dirs: list[str | None] = field(default_factory=list)
    status: int = 200
    hang: threading.Event | None = None


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    state = Endpoint("")

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            state.received.append((self.path, self.headers.get("Authorization"), body))
            state.project_dirs.append(self.headers.get("X-Turngraph-Project-Dir"))
            if state.hang is not None:
                state.hang.wait(30)
            reply = json.dumps(PROMPT_REPLY).encode() if self.path.endswith("/prompt") else b"{}"
            self.send_response(state.status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield state
    if state.hang is not None:
        state.hang.set()
    httpd.shutdown()
    httpd.server_close()


def _data(tmp_path: Path, url: str, token: str | None = TOKEN) -> Path:
    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "endpoint.json").write_text(json.dumps({"schema_version": 1, "url": url, "pid": 1}))
    if token is not None:
        (data / "endpoint.token").write_text(token + "\n")
    return data


def _run(
    data: Path, event: str, payload: bytes, *, env_data_dir: bool = False
) -> subprocess.CompletedProcess[bytes]:
    command = hook_command(
        forwarder_executable(sys.executable, install_forwarder(data)), event, "claude-code"
    )
    assert is_ours(command)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")}
    if env_data_dir:
        env["TURNGRAPH_DATA_DIR"] = str(data)
    return subprocess.run(
        ["bash", "-c", command], input=payload, env=env, capture_output=True, timeout=60
    )


def test_the_reply_is_printed_and_the_payload_arrives_as_sent(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    data = _data(tmp_path, endpoint.url)
    payload = json.dumps({"session_id": "s1", "prompt": "which database? é"}).encode()
    done = _run(data, "prompt", payload)
    assert done.returncode == 0 and done.stderr == b""
    assert json.loads(done.stdout) == PROMPT_REPLY
    assert endpoint.received == [("/v1/hooks/claude-code/prompt", f"Bearer {TOKEN}", payload)]


def test_an_empty_reply_prints_nothing(endpoint: Endpoint, tmp_path: Path) -> None:
    done = _run(_data(tmp_path, endpoint.url), "capture", b'{"session_id": "s1"}')
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert [r[0] for r in endpoint.received] == ["/v1/hooks/claude-code/capture"]


def test_the_data_folder_comes_from_the_environment_first(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    data = _data(tmp_path, endpoint.url)
    elsewhere = tmp_path / "elsewhere"  # the forwarder's own folder has no endpoint.json
    command = hook_command(
        forwarder_executable(sys.executable, install_forwarder(elsewhere)), "prompt", "codex"
    )
    env = {**os.environ, "TURNGRAPH_DATA_DIR": str(data)}
    done = subprocess.run(["bash", "-c", command], input=b"{}", env=env, capture_output=True,
                          timeout=60)  # fmt: skip
    assert json.loads(done.stdout) == PROMPT_REPLY
    assert endpoint.received[0][0] == "/v1/hooks/codex/prompt"


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize("case", ["down", "no files", "no token", "refused token", "garbage"])
def test_anything_missing_or_failing_prints_nothing_and_exits_0(
    endpoint: Endpoint, tmp_path: Path, case: str
) -> None:
    if case == "down":
        data = _data(tmp_path, f"http://127.0.0.1:{_closed_port()}")
    elif case == "no files":
        data = tmp_path / "empty"
    elif case == "no token":
        data = _data(tmp_path, endpoint.url, token=None)
    elif case == "refused token":
        endpoint.status = 401
        data = _data(tmp_path, endpoint.url)
    else:
        data = tmp_path / "data"
        data.mkdir()
        (data / "endpoint.json").write_text("{not json")
        (data / "endpoint.token").write_text(TOKEN)
    done = _run(data, "prompt", b'{"prompt": "x"}', env_data_dir=True)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_an_endpoint_that_never_answers_is_given_up_on(endpoint: Endpoint, tmp_path: Path) -> None:
    endpoint.hang = threading.Event()
    done = _run(_data(tmp_path, endpoint.url), "capture", b'{"session_id": "s1"}')
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert len(endpoint.received) == 1


def test_it_imports_no_module_beyond_the_c_socket_one(endpoint: Endpoint, tmp_path: Path) -> None:
    data = _data(tmp_path, endpoint.url)
    forwarder = install_forwarder(data)
    assert forwarder == data / "hooks" / FORWARDER
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", str(forwarder), "hook", "prompt",
         "--editor", "claude-code"], input=b"{}", capture_output=True, timeout=60,
        env={k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")},
    )  # fmt: skip
    assert json.loads(done.stdout) == PROMPT_REPLY
    bare = subprocess.run([sys.executable, "-I", "-S", "-X", "importtime", "-c", "pass"],
                          capture_output=True, timeout=60)  # fmt: skip

    def names(stderr: bytes) -> set[str]:
        return {ln.rsplit("|", 1)[-1].strip() for ln in stderr.decode().splitlines()
                if ln.startswith("import time:") and "|" in ln} - {"package"}  # fmt: skip

    assert names(done.stderr) - names(bare.stderr) == {"_socket", "turngraph_forward"}


def test_the_forwarder_runs_from_cached_bytecode_and_fails_open_without_it(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    """A script run by path is compiled on every run; the forwarder is imported beside
    the three lines editors run, so its bytecode is written once and read after."""
    data = _data(tmp_path, endpoint.url)
    assert _run(data, "prompt", b"{}").stdout
    cached = list((data / "hooks" / "__pycache__").glob(f"{FORWARDER_MODULE[:-3]}.*.pyc"))
    assert len(cached) == 1
    stub = (data / "hooks" / FORWARDER).read_bytes()
    assert stub == FORWARDER_STUB and len(stub.splitlines()) < 20
    (data / "hooks" / FORWARDER_MODULE).unlink()
    for bytecode in cached:
        bytecode.unlink()
    command = hook_command(
        forwarder_executable(sys.executable, data / "hooks" / FORWARDER), "prompt", "claude-code"
    )
    done = subprocess.run(["bash", "-c", command], input=b"{}", capture_output=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not endpoint.received[1:]  # only the first run reached it


def test_installing_twice_keeps_one_copy_and_mends_a_changed_one(tmp_path: Path) -> None:
    first = install_forwarder(tmp_path)
    first.write_text("broken")
    module = first.with_name(FORWARDER_MODULE)
    module.write_text("broken too")
    again = install_forwarder(tmp_path)
    assert again == first and again.read_bytes() == FORWARDER_STUB
    assert module.read_bytes() == Path(forward_module.__file__).read_bytes()
    assert sorted(p.name for p in (tmp_path / "hooks").iterdir()) == [FORWARDER, FORWARDER_MODULE]


def test_the_editors_project_folder_goes_along_as_a_header(
    endpoint: Endpoint, tmp_path: Path
) -> None:
    data = _data(tmp_path, endpoint.url)
    command = hook_command(
        forwarder_executable(sys.executable, install_forwarder(data)), "prompt", "gemini"
    )
    env = {**os.environ, "TURNGRAPH_DATA_DIR": str(data), "GEMINI_PROJECT_DIR": "/src/app"}
    env.pop("CLAUDE_PROJECT_DIR", None)
    subprocess.run(["bash", "-c", command], input=b"{}", env=env, timeout=60, check=True)
    assert endpoint.project_dirs == ["/src/app"]
    assert forward_module.PROJECT_DIR_VARIABLES == PROJECT_DIR_VARIABLES
