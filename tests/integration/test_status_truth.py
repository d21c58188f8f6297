"""``status`` says whether memory is reachable *now*, and a publish that cannot be
delivered says so: real ``turngraph bridge`` and ``turngraph mcp`` processes in front of
the real Redis through a TCP gate that is closed (nothing listens: Redis down) and
opened again."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import pytest
import redis

from tests.support.processes import cli_env
from tests.support.tcp_gate import TcpGate
from turngraph.embedded.services import ServiceEndpoints
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.defaults import INGEST_QUEUE

pytestmark = pytest.mark.timeout(180)


class LineClient:
    """One JSON object per line in, one per line out."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process

    def send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()

    def ask(self, message: dict[str, Any]) -> dict[str, Any]:
        self.send(message)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the process closed its output"
        reply: dict[str, Any] = json.loads(line)
        return reply


@pytest.fixture
def gated(
    embedded: ServiceEndpoints, tmp_path: Path
) -> Iterator[tuple[TcpGate, dict[str, str], redis.Redis]]:
    """The real Redis behind a gate; the environment of commands that use the gate."""
    real = urlsplit(embedded.redis_url)
    gate = TcpGate(real.hostname or "127.0.0.1", int(real.port or 6379))
    gate.open()
    netloc = real.netloc.rsplit("@", 1)[0] + f"@127.0.0.1:{gate.port}"
    url = urlunsplit(real._replace(netloc=netloc))
    data_dir = tmp_path / "data"
    ConsentStore(data_dir).enable(
        ScopeHasher.for_data_dir(data_dir).workspace(str(tmp_path)),
        consent_endpoint(url, data_dir),
    )
    env = cli_env(data_dir, TURNGRAPH_REDIS_URL=url, TURNGRAPH_GRAPH_URI=embedded.graph_uri)
    env["TURNGRAPH_LOG_LEVEL"] = "ERROR"
    conn = redis.Redis.from_url(embedded.redis_url)
    conn.flushdb()
    try:
        yield gate, env, conn
    finally:
        gate.close()
        conn.close()


def _spawn(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "turngraph", *args],
        env=env,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _finish(process: subprocess.Popen[str]) -> str:
    assert process.stdin is not None and process.stderr is not None
    process.stdin.close()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
    return process.stderr.read()


def _event(workspace: Path, index: int) -> dict[str, Any]:
    return {
        "session_id": "chat-1",
        "workspace": str(workspace),
        "user": "ada",
        "turn_index": index,
        "role": "user",
        "content": f"turn {index} about the queue",
        "client": {"name": "status-test", "version": "1"},
    }


def test_bridge_status_and_publish_tell_the_truth_about_redis(
    gated: tuple[TcpGate, dict[str, str], redis.Redis], tmp_path: Path
) -> None:
    gate, env, conn = gated
    bridge = LineClient(_spawn(["bridge"], env, tmp_path))
    try:
        up = bridge.ask({"id": 1, "op": "status"})
        assert up["redis_available"] is True and up["recall_replicas"] == 0, up
        sent = bridge.ask({"id": 2, "op": "publish", "event": _event(tmp_path, 0)})
        assert sent["success"] is True, sent
        assert bridge.ask({"id": 3, "op": "flush", "timeout_s": 10})["success"] is True

        gate.close()  # Redis down: nothing listens, open connections are cut
        down = bridge.ask({"id": 4, "op": "status"})
        assert down["id"] == 4 and down["redis_available"] is False, down
        assert down["degraded"] == ["redis_unreachable"]
        kept = bridge.ask({"id": "p5", "op": "publish", "event": _event(tmp_path, 1)})
        assert kept["id"] == "p5" and kept["success"] is False, kept
        assert kept["error_code"] == "BACKEND_UNAVAILABLE" and kept["pending"] == 1
        assert kept["event_id"].startswith("t_")

        gate.open()  # back: the kept turn goes through, and status says so
        assert bridge.ask({"id": 6, "op": "flush", "timeout_s": 20})["success"] is True
        again = bridge.ask({"id": 7, "op": "status"})
        assert again["redis_available"] is True and again["pending"] == 0, again
        assert read_stats(conn, INGEST_QUEUE).enqueued == 2  # both turns reached the queue
    finally:
        errors = _finish(bridge.process)
    assert "Traceback" not in errors, errors[-2000:]


def test_a_bridge_started_while_redis_is_down_refuses_the_first_publish(
    gated: tuple[TcpGate, dict[str, str], redis.Redis], tmp_path: Path
) -> None:
    gate, env, _ = gated
    gate.close()
    bridge = LineClient(_spawn(["bridge"], env, tmp_path))
    try:
        first = bridge.ask({"id": 1, "op": "publish", "event": _event(tmp_path, 0)})
        assert first["success"] is False and first["error_code"] == "BACKEND_UNAVAILABLE"
        assert bridge.ask({"id": 2, "op": "status"})["redis_available"] is False
    finally:
        errors = _finish(bridge.process)
    assert "Traceback" not in errors, errors[-2000:]


MCP_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "status-test", "version": "1"},
    },
}


def _mcp_status(mcp: LineClient, request_id: int) -> tuple[dict[str, Any], str]:
    reply = mcp.ask(
        {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": "status", "arguments": {}},
        }
    )
    result = reply["result"]
    return result["structuredContent"], result["content"][0]["text"]


def test_mcp_status_tool_says_not_reachable_while_redis_is_down(
    gated: tuple[TcpGate, dict[str, str], redis.Redis], tmp_path: Path
) -> None:
    gate, env, _ = gated
    mcp = LineClient(_spawn(["mcp", "--workspace", str(tmp_path)], env, tmp_path))
    try:
        assert "result" in mcp.ask(MCP_INITIALIZE)
        mcp.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        status, text = _mcp_status(mcp, 2)
        assert status["redis_available"] is True
        assert text.startswith("memory reachable, but no recall worker is running"), text
        gate.close()
        status, text = _mcp_status(mcp, 3)
        assert status["redis_available"] is False, status
        assert text.startswith("memory not reachable"), text
    finally:
        errors = _finish(mcp.process)
    assert "Traceback" not in errors, errors[-2000:]
