"""Issue 26, items 2 and 3, against the real ``turngraph bridge`` and ``turngraph mcp``
processes: every line is answered (with its ``id`` whenever that can be read) and the
process stays alive, whatever the line; a large turn being redacted does not hold back
the bridge's recall deadline."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from turngraph.clients import Clients
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.json_lines import MAX_DEPTH, MAX_LINE_BYTES

pytestmark = pytest.mark.integration

DEEP = "[" * 100_000 + "]" * 100_000
EVENT = {
    "session_id": "s1",
    "workspace": "/w",
    "user": "me",
    "turn_index": 0,
    "role": "user",
    "client": {"name": "hostile", "version": "1"},
}


def _line(request: dict[str, Any]) -> bytes:
    return json.dumps(request).encode() + b"\n"


def _raw(text: str) -> bytes:
    return text.encode() + b"\n"


BRIDGE_LINES: list[tuple[bytes, Any, str]] = [
    (_raw('{"id": 1, "op": "recall", "query": ' + DEEP + "}"), 1, "levels"),
    (_raw('{"id": 2, "op": "publish", "event": {"tags": ' + DEEP + "}}"), 2, "levels"),
    (_raw('{"id": 3, "op": "recall", "query": "q", "half_life_days": NaN}'), 3, "half_life_days"),
    (_raw('{"id": 4, "op": "recall", "query": "q", "half_life_days": -Infinity}'), 4, "half_life"),
    (_raw('{"id": 5, "op": "recall", "query": "q", "half_life_days": 1e999}'), 5, "half_life"),
    (_raw('{"id": 6, "op": "recall", "query": "bad \\ud800 text"}'), 6, "query"),
    (_raw('{"id": 7, "op": "publish", "event": {"content": "\\udfff", "x": 1}}'), 7, "content"),
    (b"\n", None, "empty"),
    (b"   \r\n", None, "empty"),
    (b'{"id": 8, "op": "status", "pad": "' + b"x" * (MAX_LINE_BYTES + 10) + b'"}\n', 8, "longer"),
    (_raw('{"id": "nine", "op": "status"'), "nine", "not valid JSON"),
]


def _refuse_constant(name: str) -> None:
    raise AssertionError(f"a reply carries the bare constant {name}")


def _bridge_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")}
    env.update(TURNGRAPH_DATA_DIR=str(tmp_path / "data"), TURNGRAPH_LOG_LEVEL="ERROR", **extra)
    return env


def test_the_bridge_answers_every_hostile_line_and_stays_alive(tmp_path: Path) -> None:
    big_turn = {
        "id": 10,
        "op": "publish",
        # 200,000 characters, each written as a \u escape: 1.2 MB on the line
        "event": {**EVENT, "content": "\u00e9" * 200_000},
    }
    lines = b"".join(line for line, _, _ in BRIDGE_LINES)
    lines += json.dumps(big_turn, ensure_ascii=True).encode() + b"\n"
    lines += _line({"id": 11, "op": "status"})
    done = subprocess.run(
        [sys.executable, "-m", "turngraph.cli", "bridge"],
        input=lines,
        capture_output=True,
        env=_bridge_env(tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]  # JSON.parse-able too
    assert len(replies) == len(BRIDGE_LINES) + 2, replies
    for reply, (_, expected_id, says) in zip(replies, BRIDGE_LINES, strict=False):
        assert reply.get("id") == expected_id, reply
        assert reply["success"] is False and reply["remediation"], reply
        assert says in reply["user_message"], reply
    assert str(MAX_DEPTH) in replies[0]["user_message"]
    # The escaped 200k-character turn is read and validated: refused only for consent.
    assert replies[-2]["id"] == 10 and replies[-2]["error_code"] == "CONSENT_REQUIRED"
    assert replies[-1] == {**replies[-1], "id": 11, "success": True}
    for line in done.stdout.splitlines():  # as JSON.parse reads them: no bare NaN/Infinity
        json.loads(line, parse_constant=_refuse_constant)


def _initialize(request_id: int) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "hostile", "version": "1"},
        },
    }


def _call(request_id: Any, arguments: str) -> str:
    return (
        '{"jsonrpc": "2.0", "id": ' + json.dumps(request_id) + ', "method": "tools/call", '
        '"params": {"name": "recall", "arguments": ' + arguments + "}}"
    )


MCP_LINES: list[tuple[bytes, Any, int]] = [
    (b"\x00garbage " * 1_250_000 + b"\n", None, -32600),  # 10 MB, over the line limit
    (_raw(_call(21, '{"query": ' + DEEP + "}")), 21, -32600),
    (_raw('{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}'), None, -32600),
    (_raw('[{"jsonrpc": "2.0", "id": 22, "method": "ping"}]'), None, -32600),
    (_raw("null"), None, -32600),
    (_raw('{"jsonrpc": "2.0", "id": 23, "method": "ping"'), 23, -32700),
    (_raw('{"id": 24, "op": "status"}'), 24, -32600),
    (_raw(_call(25, '{"query": "bad \\ud800"}')), 25, -32600),
    (_raw(_call(26, '{"query": "q", "bogus": 1}')), 26, -32602),
    (_raw(_call(27, '{"query": "q", "max_results": NaN}')), 27, -32600),
    (b"\xff\xfe not utf-8\n", None, -32700),
]


@pytest.fixture
def mcp_process(tmp_path: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "mcp", "--workspace", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "mcp.err").open("wb"),
        env=_bridge_env(tmp_path, LANG="C.UTF-8"),
        cwd=tmp_path,
    )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def test_mcp_answers_every_malformed_message_and_keeps_serving(
    mcp_process: subprocess.Popen[bytes], tmp_path: Path
) -> None:
    assert mcp_process.stdin is not None and mcp_process.stdout is not None
    lines = _line(_initialize(20)) + _line(
        {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    lines += b"".join(line for line, _, _ in MCP_LINES)
    lines += _line({"jsonrpc": "2.0", "id": 29, "method": "tools/list"})

    def write() -> None:
        assert mcp_process.stdin is not None
        mcp_process.stdin.write(lines)
        mcp_process.stdin.flush()

    writer = threading.Thread(target=write, daemon=True)  # 10 MB: more than a pipe holds
    writer.start()
    replies: list[dict[str, Any]] = []
    timer = threading.Timer(120, mcp_process.kill)
    timer.start()
    try:
        while not any(r.get("id") == 29 for r in replies):
            line = mcp_process.stdout.readline()
            if not line:
                break
            replies.append(json.loads(line))
    finally:
        timer.cancel()
    writer.join(timeout=30)
    assert mcp_process.poll() is None, (tmp_path / "mcp.err").read_text()[-3000:]
    errors = [r for r in replies if "error" in r]
    expected = sorted((str(i), code) for _, i, code in MCP_LINES)
    assert sorted((str(r["id"]), r["error"]["code"]) for r in errors) == expected, errors
    listed = next(r for r in replies if r.get("id") == 29)
    assert {tool["name"] for tool in listed["result"]["tools"]} >= {"recall", "remember"}
    unknown = next(r for r in errors if r["id"] == 26)
    assert "bogus" in unknown["error"]["message"] and "query" in unknown["error"]["message"]
    assert "Traceback" not in (tmp_path / "mcp.err").read_text()


HOSTILE_TURN = "İ " + "a." * 99_990 + "://x"
"""Issue 26's quadratic family at 200k characters: 84 s extrapolated before the fix."""


def test_the_bridge_keeps_its_recall_deadline_while_a_large_turn_is_redacted(
    clients: Clients, tmp_path: Path
) -> None:
    settings = clients.settings
    assert settings.redis_url
    data_dir = tmp_path / "data"
    ConsentStore(data_dir).enable(
        ScopeHasher.for_data_dir(data_dir).workspace("/w"),
        consent_endpoint(settings.redis_url, data_dir),
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "bridge"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=_bridge_env(tmp_path, TURNGRAPH_REDIS_URL=settings.redis_url,
                        TURNGRAPH_GRAPH_URI=settings.graph_uri or ""),
        cwd=tmp_path,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        process.stdin.write(_line({"id": 1, "op": "status"}))
        process.stdin.flush()
        assert json.loads(process.stdout.readline())["id"] == 1  # connected and serving
        turns = b"".join(
            _line({"id": 100 + i, "op": "publish", "event": {**EVENT, "turn_index": i,
                                                               "content": HOSTILE_TURN}})
            for i in range(3)
        )  # fmt: skip
        process.stdin.write(turns)
        process.stdin.flush()
        for i in range(3):
            reply = json.loads(process.stdout.readline())
            assert reply["id"] == 100 + i and reply["success"] is True, reply
        # No recall worker here: the answer is the fail-open one, at the deadline.
        started = time.monotonic()
        process.stdin.write(_line({"id": 2, "op": "recall", "query": "q", "deadline_ms": 750}))
        process.stdin.flush()
        reply = json.loads(process.stdout.readline())
        took_s = time.monotonic() - started
        assert reply["id"] == 2 and reply["error_code"] == "DEADLINE_EXCEEDED", reply
        # 750 ms plus start-up slack on a loaded machine; before the fix: 65 s.
        assert took_s < 5.0, f"recall answered after {took_s:.1f} s"
    finally:
        process.stdin.close()
        process.wait(timeout=60)
