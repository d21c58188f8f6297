"""The local endpoint (``turngraph endpoint``) as a real process against real workers: the
bridge's ops, hook events (capture answered before its publish, then stored; a prompt
answered with memory), the token, failing open with Redis away, and the CLI's fast path
taken when the endpoint is up and the full path when it is not."""

from __future__ import annotations

import http.client
import json
import os
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
import redis

from tests.support.hook_services import hook_services
from tests.support.worker_processes import wait_for
from turngraph.embedded import ServiceEndpoints
from turngraph.embedded.process import free_port
from turngraph.endpoint.files import ENDPOINT_FILE, TOKEN_FILE, read_live
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.hooks.state import HookState
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "data" / "hooks"
PAYLOADS = json.loads((FIXTURES / "payloads.json").read_text())
STARTUP_S = 90.0


@dataclass
class Endpoint:
    process: subprocess.Popen[bytes]
    data_dir: Path
    env: dict[str, str]
    url: str
    token: str

    def post(
        self, path: str, body: Any, token: str | None = "", timeout_s: float = 30.0
    ) -> tuple[int, dict[str, Any]]:
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=timeout_s)
        headers = {"Content-Type": "application/json"}
        if token is not None:
            headers["Authorization"] = f"Bearer {token or self.token}"
        try:
            conn.request("POST", path, body=json.dumps(body).encode(), headers=headers)
            response = conn.getresponse()
            return response.status, json.loads(response.read())
        finally:
            conn.close()

    def served(self) -> dict[str, int]:
        parts = urlsplit(self.url)
        conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=30)
        try:
            conn.request("GET", "/v1/health")
            health = json.loads(conn.getresponse().read())
        finally:
            conn.close()
        assert health["ok"] is True
        return dict(health["served"])


def start_endpoint(env: dict[str, str], data_dir: Path) -> Endpoint:
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "endpoint"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    live = None

    def listening() -> bool:
        nonlocal live
        assert process.poll() is None, process.stderr.read() if process.stderr else b""
        live = read_live(data_dir)
        return live is not None and live.pid == process.pid

    assert wait_for(listening, STARTUP_S), "the endpoint never named itself"
    assert live is not None
    return Endpoint(process, data_dir, env, live.url, live.token)


def stop_endpoint(endpoint: Endpoint) -> int:
    """SIGTERM, as ``turngraph up`` stops it; its exit status (killed after 60 s)."""
    process = endpoint.process
    process.send_signal(signal.SIGTERM)
    try:
        _, errors = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        process.kill()
        _, errors = process.communicate()
    assert b"Traceback" not in errors, errors.decode(errors="replace")[-2000:]
    return process.returncode


@dataclass
class Live:
    endpoint: Endpoint
    settings: Settings
    conn: redis.Redis
    project: Path


@pytest.fixture(scope="module")
def live(embedded: ServiceEndpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("endpoint")
    project = root / "project"
    project.mkdir()
    with hook_services(embedded, root, home=root / "home", maintenance=False) as services:
        settings = services.settings
        hasher = ScopeHasher.for_data_dir(settings.data_dir)
        ConsentStore(settings.data_dir).enable(
            hasher.workspace(str(project.resolve())),
            consent_endpoint(settings.redis_url, settings.data_dir),
        )
        endpoint = start_endpoint(services.env, settings.data_dir)
        try:
            yield Live(endpoint, settings, services.conn, project)
        finally:
            assert stop_endpoint(endpoint) == 0
            assert not (settings.data_dir / ENDPOINT_FILE).exists()  # removed on a clean stop


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_token_and_the_endpoint_file_are_private(live: Live) -> None:
    data = live.settings.data_dir
    assert _mode(data / TOKEN_FILE) == 0o600
    assert _mode(data / ENDPOINT_FILE) == 0o600
    assert _mode(data) == 0o700
    assert urlsplit(live.endpoint.url).hostname == "127.0.0.1"


def test_a_missing_or_wrong_token_is_refused_with_the_error_contract(live: Live) -> None:
    for token in (None, "not-the-token"):
        for path in ("/v1/status", "/v1/hooks/claude-code/prompt"):
            status, body = live.endpoint.post(path, {}, token=token)
            assert status == 401
            assert body["success"] is False and body["error_code"] == "UNAUTHORIZED"
            assert body["user_message"] and body["remediation"]
            assert live.endpoint.token not in json.dumps(body)
    assert live.endpoint.served().get("status", 0) == 0  # refused before any work


def test_publish_recall_and_status_answer_through_the_endpoint(live: Live) -> None:
    workspace = str(live.project)
    event = {
        "session_id": "endpoint-ops", "workspace": workspace, "user": "alice",
        "turn_index": 0, "role": "user",
        "content": "We chose the walrus cache for the endpoint's replies.",
        "client": {"name": "tests", "version": "1"},
    }  # fmt: skip
    status, reply = live.endpoint.post("/v1/publish", {"event": event})
    assert status == 200 and reply["success"] is True and reply["event_id"]
    status, flushed = live.endpoint.post("/v1/flush", {"timeout_s": 5})
    assert flushed["success"] is True

    def found() -> bool:
        _, answer = live.endpoint.post(
            "/v1/recall", {"query": "which cache for replies?", "workspace": workspace,
                           "user": "alice", "deadline_ms": 2000},
        )  # fmt: skip
        return answer["success"] and any("walrus" in r["text"] for r in answer["results"])

    assert wait_for(found, 90), "the published turn was never recalled through the endpoint"
    _, state = live.endpoint.post("/v1/status", {})
    assert state["success"] is True and state["redis_available"] is True
    assert state["recall_replicas"] >= 1

    _, refused = live.endpoint.post("/v1/recall", {"query": ""})
    assert refused["success"] is False and refused["error_code"] == "INVALID_REQUEST"
    status, unknown = live.endpoint.post("/v1/nonsense", {})
    assert status == 404 and unknown["error_code"] == "UNKNOWN_OP"


def test_a_capture_hook_answers_before_its_publish_and_the_turns_are_then_stored(
    live: Live,
) -> None:
    transcript = live.project / "capture.jsonl"
    transcript.write_bytes((FIXTURES / "claude-code.jsonl").read_bytes())
    payload = json.loads(
        json.dumps(PAYLOADS["claude-code"]["Stop"])
        .replace("{cwd}", str(live.project))
        .replace("{transcript}", str(transcript))
    )
    payload["session_id"] = "endpoint-capture"
    state = HookState(live.settings.data_dir)

    def enqueued() -> int:
        return read_stats(live.conn, live.settings.ingest_queue).enqueued

    before = enqueued()
    # The capture's work takes this transcript's lock: held here, its publish cannot have
    # happened when the reply arrives.
    with state.locked("transcript", str(transcript)):
        status, reply = live.endpoint.post("/v1/hooks/claude-code/capture", payload)
        assert (status, reply) == (200, {})
        assert enqueued() == before
    assert wait_for(lambda: enqueued() == before + 9, 60), enqueued() - before  # nine turns

    # A later prompt in another session gets the decision as context.
    def recalled() -> bool:
        prompt = json.loads(
            json.dumps(PAYLOADS["claude-code"]["UserPromptSubmit"])
            .replace("{cwd}", str(live.project))
            .replace("{transcript}", str(live.project / "s2.jsonl"))
        )
        prompt["session_id"] = "endpoint-prompt"
        _, answer = live.endpoint.post("/v1/hooks/claude-code/prompt", prompt)
        context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
        return "drop_oldest" in context

    assert wait_for(recalled, 90), HookState(live.settings.data_dir).counters()


def test_bad_hook_calls_answer_empty_and_are_counted(live: Live) -> None:
    state = HookState(live.settings.data_dir)
    before = state.counters()
    assert live.endpoint.post("/v1/hooks/claude-code/prompt", ["not", "an", "object"])[1] == {}
    assert live.endpoint.post("/v1/hooks/no-such-editor/prompt", {})[1] == {}
    after = state.counters()
    assert after.get("error_bad_payload", 0) == before.get("error_bad_payload", 0) + 1
    assert after.get("error_bad_arguments", 0) == before.get("error_bad_arguments", 0) + 1


def _cli(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "turngraph", *args],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _imported(stderr: str) -> set[str]:
    return {
        line.split("|")[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:")
    }


def test_the_cli_takes_the_endpoint_when_it_is_up_and_imports_nothing_heavy(live: Live) -> None:
    served = live.endpoint.served()
    done = _cli(live.endpoint.env, "status")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("memory reachable")
    recall = _cli(live.endpoint.env, "recall", "drop policy", "--workspace", str(live.project))
    assert recall.returncode == 0, recall.stderr[-2000:]
    as_json = _cli(live.endpoint.env, "recall", "x", "--json")
    assert json.loads(as_json.stdout)["success"] is True
    after = live.endpoint.served()
    assert after["status"] == served.get("status", 0) + 1
    assert after["recall"] == served.get("recall", 0) + 2
    heavy = {"redis", "pydantic", "structlog", "rq", "numpy", "neo4j", "turngraph.settings",
             "argparse", "turngraph.cli"}  # fmt: skip
    for run in (done, recall, as_json):
        assert not heavy & _imported(run.stderr), heavy & _imported(run.stderr)
        assert "bridge_connected" not in run.stderr


def test_publish_takes_the_endpoint_when_it_is_up_and_the_turn_is_stored(live: Live) -> None:
    served = live.endpoint.served()
    workspace = str(live.project)
    done = _cli(live.endpoint.env, "publish", "We settled on the heron index for replies.",
                "--session", "cli-fast", "--turn-index", "0", "--workspace", workspace,
                "--user", "bob", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["event_id"]
    after = live.endpoint.served()
    assert after["publish"] == served.get("publish", 0) + 1
    assert after["flush"] == served.get("flush", 0) + 1
    heavy = {"redis", "pydantic", "structlog", "rq", "turngraph.settings", "argparse",
             "turngraph.cli"}  # fmt: skip
    assert not heavy & _imported(done.stderr), heavy & _imported(done.stderr)
    # the text on stdin (not read twice): the full command line reads it, then the endpoint
    piped = subprocess.run(
        [sys.executable, "-m", "turngraph", "publish", "-", "--session", "cli-fast",
         "--turn-index", "1", "--workspace", workspace, "--user", "bob"],
        env=live.endpoint.env, input="and the heron index keeps 30 days", capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert piped.returncode == 0, piped.stderr[-2000:]
    assert piped.stdout.startswith("published (event ")
    assert live.endpoint.served()["publish"] == after["publish"] + 1

    def found() -> bool:
        _, answer = live.endpoint.post(
            "/v1/recall", {"query": "which index for replies?", "workspace": workspace,
                           "user": "bob", "deadline_ms": 2000},
        )  # fmt: skip
        texts = " ".join(r["text"] for r in answer.get("results") or [])
        return "heron index for replies" in texts and "30 days" in texts

    assert wait_for(found, 90), "the published turns were never recalled"


def test_the_cli_takes_the_full_path_when_no_endpoint_is_up(live: Live, tmp_path: Path) -> None:
    env = {**live.endpoint.env, "TURNGRAPH_DATA_DIR": str(tmp_path / "data")}
    served = live.endpoint.served()
    done = _cli(env, "status", "--json")
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout)["redis_available"] is True
    assert "redis" in _imported(done.stderr)  # its own connection
    assert "bridge_connected" not in done.stderr
    assert live.endpoint.served().get("status", 0) == served.get("status", 0)


def test_with_redis_away_hooks_answer_empty_and_count_it(tmp_path: Path) -> None:
    data = tmp_path / "data"
    away = f"redis://127.0.0.1:{free_port()}/0"
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": away,
        "TURNGRAPH_GRAPH_URI": f"bolt://127.0.0.1:{free_port()}",
        "TURNGRAPH_DATA_DIR": str(data),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }
    project = tmp_path / "project"
    project.mkdir()
    ConsentStore(data).enable(
        ScopeHasher.for_data_dir(data).workspace(str(project.resolve())),
        consent_endpoint(away, data),
    )
    endpoint = start_endpoint(env, data)
    try:
        state = HookState(data)
        prompt = json.loads(
            json.dumps(PAYLOADS["claude-code"]["UserPromptSubmit"])
            .replace("{cwd}", str(project))
            .replace("{transcript}", str(project / "t.jsonl"))
        )
        assert endpoint.post("/v1/hooks/claude-code/prompt", prompt) == (200, {})
        transcript = project / "t.jsonl"
        transcript.write_bytes((FIXTURES / "claude-code.jsonl").read_bytes())
        stop_payload = {**prompt, "hook_event_name": "Stop"}
        stop_payload.pop("prompt")
        assert endpoint.post("/v1/hooks/claude-code/capture", stop_payload) == (200, {})
        assert wait_for(lambda: state.counters().get("error_backend_unavailable", 0) >= 1, 30), (
            state.counters()
        )
        counters = state.counters()
        assert counters["calls_prompt"] == 1 and counters["calls_capture"] == 1
        assert counters.get("recall_failed", 0) + counters.get("recall_skipped", 0) == 1
        _, status = endpoint.post("/v1/status", {})
        assert status["success"] is True and status["redis_available"] is False
    finally:
        assert stop_endpoint(endpoint) == 0
    assert read_live(data) is None
    again = start_endpoint(env, data)  # a restart keeps its URL (and its token)
    try:
        assert (again.url, again.token) == (endpoint.url, endpoint.token)
    finally:
        assert stop_endpoint(again) == 0
