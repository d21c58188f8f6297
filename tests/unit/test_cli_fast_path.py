"""The console script's fast path (``turngraph.fast_path``): the command lines it reads in
full give the very request the full command line builds; anything else is left to the
full command line; a run through the endpoint imports neither argparse nor the CLI; an
endpoint that cannot be reached is tried once per command."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from turngraph.cli import build_parser
from turngraph.endpoint import client
from turngraph.endpoint.files import ensure_token, write_endpoint
from turngraph.fast_path import fast_request, publish_event, recall_request

READ_IN_FULL = [
    ["recall", "drop policy"],
    ["recall", "drop policy", "--json"],
    ["recall", "--workspace", "sub", "q", "--max-results", "3", "--max-tokens=400"],
    ["recall", "q", "--session", "s1", "--user", "ana", "--deadline-ms", "900", "--json"],
    ["recall", ""],
]
LEFT_TO_ARGPARSE = [
    ["recall"],
    ["recall", "a", "b"],
    ["recall", "--help"],
    ["recall", "-h", "q"],
    ["recall", "q", "--max-results", "many"],
    ["recall", "q", "--max-res", "3"],  # argparse's abbreviation
    ["recall", "q", "--session"],
    ["recall", "q", "--session", "-x"],
    ["recall", "--", "-q"],
    ["recall", "q", "--json=yes"],
    ["status", "now"],
    ["status", "--verbose"],
    ["publish", "text", "--session", "s"],  # no --turn-index
    ["publish", "text", "--turn-index", "0"],  # no --session
    ["publish", "-", "--session", "s", "--turn-index", "0"],  # stdin: read once, by argparse
    ["publish", "text", "--session", "s", "--turn-index", "0", "--git"],
    ["publish", "text", "--session", "s", "--turn-index", "0", "--role", "robot"],
    ["publish", "text", "--session", "s", "--turn-index", "zero"],
    ["--help"],
    [],
]


@pytest.mark.parametrize("argv", READ_IN_FULL)
def test_a_command_line_read_in_full_is_the_request_argparse_builds(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    read = fast_request(argv)
    parsed = build_parser("recall").parse_args(argv)
    assert read == ("recall", recall_request(vars(parsed)), parsed.json)


PUBLISH_READ_IN_FULL = [
    ["publish", "a turn", "--session", "s", "--turn-index", "0"],
    ["publish", "--session=s", "--turn-index", "3", "a turn", "--role", "assistant", "--json"],
    [
        "publish",
        "t",
        "--session",
        "s",
        "--turn-index",
        "1",
        "--workspace",
        "sub",
        "--user",
        "ana",
        "--client-name",
        "ext",
        "--client-version",
        "2",
        "--importance",
        "0.9",
    ],
]


@pytest.mark.parametrize("argv", PUBLISH_READ_IN_FULL)
def test_a_publish_read_in_full_is_the_event_argparse_builds(
    argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "sub").mkdir()
    read = fast_request(argv)
    parsed = build_parser("publish").parse_args(argv)
    event = publish_event(vars(parsed), parsed.content)
    assert read == ("publish", {"event": event}, parsed.json)


@pytest.mark.parametrize("argv", LEFT_TO_ARGPARSE)
def test_anything_else_is_left_to_the_full_command_line(argv: list[str]) -> None:
    assert fast_request(argv) is None


def test_status_is_read_with_or_without_json() -> None:
    assert fast_request(["status"]) == ("status", {}, False)
    assert fast_request(["status", "--json"]) == ("status", {}, True)


@pytest.fixture
def endpoint(tmp_path: Path) -> Iterator[tuple[Path, list[tuple[str, dict[str, Any]]]]]:
    """An HTTP server holding the endpoint's contract for recall, named in a data folder."""
    received: list[tuple[str, dict[str, Any]]] = []
    folder = tmp_path / "data"
    token = ensure_token(folder)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            assert self.headers["Authorization"] == f"Bearer {token}"
            received.append((self.path, body))
            reply = json.dumps({"success": True, "results": [
                {"kind": "decision", "text": "drop_oldest when full", "score": {"final_score": 0.8}}
            ]}).encode()  # fmt: skip
            self.send_response(200)
            self.send_header("Content-Length", str(len(reply)))
            self.end_headers()
            self.wfile.write(reply)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_address[1]
    write_endpoint(folder, f"http://127.0.0.1:{port}", os.getpid(), port)
    try:
        yield folder, received
    finally:
        server.shutdown()
        server.server_close()


def test_recall_through_the_endpoint_imports_neither_argparse_nor_the_cli(
    endpoint: tuple[Path, list[tuple[str, dict[str, Any]]]], tmp_path: Path
) -> None:
    folder, received = endpoint
    env = {**os.environ, "TURNGRAPH_DATA_DIR": str(folder)}
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "turngraph", "recall", "drop policy"],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "decision" in done.stdout and "drop_oldest when full" in done.stdout
    asked = {"query": "drop policy", "workspace": str(tmp_path.resolve()), "max_results": 5,
             "max_tokens": 1000}  # fmt: skip
    assert received == [("/v1/recall", asked)]
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines()
                if line.startswith("import time:")}  # fmt: skip
    assert not imported & {"argparse", "turngraph.cli", "typing", "logging", "http.client"}


def test_an_endpoint_that_cannot_be_reached_is_tried_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client, "_unreachable", [])
    folder = tmp_path / "data"
    ensure_token(folder)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    write_endpoint(folder, f"http://127.0.0.1:{port}", os.getpid(), port)
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", str(folder))
    named = client.find()
    assert named is not None
    with pytest.raises(client.EndpointUnavailable):
        named.call("status", {})
    assert client.find() is None  # the full code path does not wait for it again
