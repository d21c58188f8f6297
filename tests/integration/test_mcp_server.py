"""``turngraph mcp`` driven by the MCP Python SDK's own client over stdio: the tools (the
distill ones answered by a real maintenance worker process), the consent check and the
fail-open deadline of the bridge, forget's confirmation (asked
through elicitation, or by a token where the client cannot ask), and a garbage line."""

from __future__ import annotations

import getpass
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from mcp import types as mcp_types

from tests.support.distill import decision_events
from tests.support.maintenance import maintenance_worker
from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.keys import INBOX_TEMPLATE
from turngraph.schemas.recall import DEFAULT_DEADLINE_MS
from turngraph.workers.extraction.offline import OfflineExtractor

pytestmark = pytest.mark.integration

INGESTED = "Decision: release builds are signed with the hardware key in the vault."
QUERY = "how are release builds signed?"
TOOLS = {"recall", "remember", "recap", "summarize_recent", "promote", "forget", "status"}


@pytest.fixture
def served(clients: Clients, tmp_path: Path) -> Iterator[tuple[dict[str, str], Path, Clients]]:
    settings = clients.settings
    assert settings.redis_url
    workspace = tmp_path / "proj"
    workspace.mkdir()
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    hashed = hasher.workspace(str(workspace))
    ConsentStore(settings.data_dir).enable(
        hashed, consent_endpoint(settings.redis_url, settings.data_dir)
    )
    build_pipeline(clients).ingest(
        [turn(INGESTED, 0, session=hasher.session("s-old"), workspace=hashed, user="u_x")]
    )
    recall = build_recall_worker(clients)
    recall.bootstrap()
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri or "",
        "TURNGRAPH_GRAPH_USER": settings.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
        "TURNGRAPH_DATA_DIR": str(settings.data_dir),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }
    if settings.graph_database:
        env["TURNGRAPH_GRAPH_DATABASE"] = settings.graph_database
    try:
        yield env, workspace, clients
    finally:
        recall.stop()
        thread.join(timeout=10)


def _server(env: dict[str, str], workspace: Path) -> StdioServerParameters:
    return StdioServerParameters(
        command=sys.executable,
        args=["-m", "turngraph.cli", "mcp", "--workspace", str(workspace)],
        env=env,
        cwd=str(workspace),
    )


def _text(result: mcp_types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))


def test_tools_through_the_sdk_client(
    served: tuple[dict[str, str], Path, Clients], tmp_path: Path
) -> None:
    env, workspace, clients = served
    other = tmp_path / "not-consented"
    other.mkdir()

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(_server(env, workspace)) as client:
            out["tools"] = {tool.name for tool in (await client.list_tools()).tools}
            out["recall"] = await client.call_tool("recall", {"query": QUERY})
            out["clamped"] = await client.call_tool("recall", {"query": QUERY, "max_results": 99})
            out["remember"] = await client.call_tool(
                "remember", {"content": "Preference: answers in British English."}
            )
            out["status"] = await client.call_tool("status", {})
        async with Client(_server(env, other)) as client:
            out["refused"] = await client.call_tool("remember", {"content": "a note"})
        return out

    out = anyio.run(session)
    assert out["tools"] == TOOLS
    recall = out["recall"]
    assert not recall.is_error and recall.structured_content["success"] is True
    results = recall.structured_content["results"]
    assert any("hardware key" in result["text"] for result in results)
    assert all(result["source_event_ids"] for result in results)
    assert "<memory" in _text(recall)
    assert out["clamped"].structured_content["clamped"]["max_results"] == {
        "requested": 99,
        "used": 50,
    }
    remember = out["remember"]
    assert not remember.is_error and remember.structured_content["buffered"] is True
    assert clients.redis.llen(INBOX_TEMPLATE.format(queue=clients.settings.ingest_queue)) == 1
    assert out["status"].structured_content["publisher"]["enqueued"] == 1
    refused = out["refused"]
    assert refused.is_error and refused.structured_content["error_code"] == "CONSENT_REQUIRED"


def test_distill_tools_through_the_sdk_client(
    served: tuple[dict[str, str], Path, Clients],
) -> None:
    env, workspace, clients = served
    hasher = ScopeHasher.for_data_dir(clients.settings.data_dir)
    events = decision_events(
        session=hasher.session("chat-dec"),
        workspace=hasher.workspace(str(workspace)),
        user=hasher.user(getpass.getuser()),
    )
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(events)
    secret = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
    ingest_queue = INBOX_TEMPLATE.format(queue=clients.settings.ingest_queue)

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(_server(env, workspace)) as client:
            out["recap"] = await client.call_tool("recap", {"budget_tokens": 400})
            out["summarize"] = await client.call_tool(
                "summarize_recent", {"turns": 4, "session_id": "chat-dec"}
            )
            out["summarize_empty"] = await client.call_tool("summarize_recent", {})
            out["promote"] = await client.call_tool(
                "promote",
                {"text": "Run the Lua enqueue script tests before merging.", "kind": "procedure"},
            )
            out["queued_after_promote"] = clients.redis.llen(ingest_queue)
            out["secret"] = await client.call_tool(
                "promote", {"text": f"Use the token {secret} for CI.", "kind": "procedure"}
            )
            out["queued_after_secret"] = clients.redis.llen(ingest_queue)
            promoted = (out["promote"].structured_content or {}).get("memory", {}).get("id")
            for _ in range(100):  # the recall worker follows the change stream
                found = await client.call_tool("recall", {"query": "what runs before merging?"})
                out["recall"] = found
                # By id: the session's summary and recap say "Lua enqueue script" too.
                ids = [r.get("memory_id") for r in found.structured_content.get("results", [])]
                if promoted in ids:
                    break
                await anyio.sleep(0.2)
        return out

    with maintenance_worker(env):
        out = anyio.run(session)
    recap = out["recap"]
    assert not recap.is_error, _text(recap)
    assert recap.structured_content["session_id"] == hasher.session("chat-dec")
    assert recap.structured_content["recap"]["tokens"] <= 400
    assert _text(recap).splitlines()[-1].startswith("Where we stopped")
    summarize = out["summarize"]
    assert not summarize.is_error, _text(summarize)
    assert summarize.structured_content["summary"]["status"] == "Final"
    assert _text(summarize).startswith("Topic:") and "Decisions:" in _text(summarize)
    empty = out["summarize_empty"]
    assert empty.is_error and empty.structured_content["error_code"] == "NOT_FOUND"
    promote = out["promote"]
    assert not promote.is_error, _text(promote)
    memory = promote.structured_content["memory"]
    assert memory["kind"] == "procedure" and memory["scope"] == "workspace"
    assert len(memory["source_event_ids"]) == 1  # the note it was kept as
    assert out["queued_after_promote"] == 1
    refused = out["secret"]
    assert refused.is_error and refused.structured_content["error_code"] == "REFUSED"
    assert secret not in _text(refused) and out["queued_after_secret"] == 1  # nothing sent
    hits = [
        r for r in out["recall"].structured_content["results"] if r.get("memory_id") == memory["id"]
    ]
    answer = out["recall"].structured_content
    seen = [(r.get("memory_id"), r["kind"], r["text"][:60]) for r in answer.get("results", [])]
    assert hits, f"promoted {memory['id']} not recalled: {seen}, degraded {answer.get('degraded')}"
    assert hits[0]["source_event_ids"] == memory["source_event_ids"]


def test_forget_asks_the_user_first(served: tuple[dict[str, str], Path, Clients]) -> None:
    env, workspace, _ = served
    asked: list[str] = []

    async def decline(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="decline")

    async def accept(context: Any, params: Any) -> mcp_types.ElicitResult:
        asked.append(params.message)
        return mcp_types.ElicitResult(action="accept", content={"confirm": True})

    async def session() -> dict[str, Any]:
        out: dict[str, Any] = {}
        async with Client(_server(env, workspace), elicitation_callback=decline) as client:
            out["declined"] = await client.call_tool("forget", {})
            out["still_there"] = await client.call_tool("recall", {"query": QUERY})
        async with Client(_server(env, workspace), elicitation_callback=accept) as client:
            out["forgotten"] = await client.call_tool("forget", {})
            out["gone"] = await client.call_tool("recall", {"query": QUERY})
        return out

    out = anyio.run(session)
    assert len(asked) == 2 and "proj" in asked[0] and str(workspace) not in asked[0]
    declined = out["declined"].structured_content
    assert declined["error_code"] == "CONFIRMATION_REQUIRED"
    assert "confirmation_token" not in declined  # the user said no: no way around it
    assert out["still_there"].structured_content["results"]
    forgotten = out["forgotten"]
    assert not forgotten.is_error and forgotten.structured_content["nodes_deleted"] >= 1
    assert out["gone"].structured_content["results"] == []


def test_forget_without_elicitation_needs_the_token(
    served: tuple[dict[str, str], Path, Clients],
) -> None:
    env, workspace, _ = served

    async def session() -> list[mcp_types.CallToolResult]:
        async with Client(_server(env, workspace)) as client:
            first = await client.call_tool("forget", {"scope": "workspace"})
            token = first.structured_content["confirmation_token"]
            wrong = await client.call_tool("forget", {"confirm": "0" * len(token)})
            right = await client.call_tool("forget", {"confirm": token})
            return [first, wrong, right]

    first, wrong, right = anyio.run(session)
    assert first.is_error and first.structured_content["error_code"] == "CONFIRMATION_REQUIRED"
    assert wrong.is_error and wrong.structured_content["error_code"] == "CONFIRMATION_REQUIRED"
    assert not right.is_error and right.structured_content["forgotten"]["scope"] == "workspace"


def test_recall_fails_open_within_the_deadline_without_a_recall_worker(
    clients: Clients, tmp_path: Path
) -> None:
    settings = clients.settings
    assert settings.redis_url
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri or "",
        "TURNGRAPH_DATA_DIR": str(tmp_path / "data"),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }

    async def timed(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[Any, float]:
        started = time.monotonic()
        result = await client.call_tool(tool, arguments)
        return result, time.monotonic() - started

    async def ask() -> tuple[mcp_types.CallToolResult, float, float]:
        async with Client(_server(env, tmp_path)) as client:
            # The session's first call waits for the bridge's build (Redis, the drivers,
            # the redaction rules: 1.1-1.9 s at load 14, bench.startup measures it), which
            # is no part of a recall's deadline; a status call takes it here.
            await client.call_tool("status", {})
            result, took_s = await timed(client, "recall", {"query": QUERY})
            _, round_trip_s = await timed(client, "status", {})  # the same path, no wait
            return result, took_s, round_trip_s

    result, took_s, round_trip_s = anyio.run(ask)
    assert result.is_error and result.structured_content["error_code"] == "DEADLINE_EXCEEDED"
    assert result.structured_content["degraded"] == ["deadline_exceeded"]
    # The 750 ms deadline, the stdio round trip measured in the same session, and 1 s for a
    # loaded machine's scheduling (0.76-0.86 s in all at load 14, round trips 0.01-0.04 s):
    # a recall that waited for a worker past its deadline would not pass.
    assert took_s < DEFAULT_DEADLINE_MS / 1000 + round_trip_s + 1.0, (took_s, round_trip_s)


def test_a_line_of_invalid_utf8_does_not_stop_the_server(tmp_path: Path) -> None:
    env = {**os.environ, "TURNGRAPH_DATA_DIR": str(tmp_path / "data"), "LANG": "en_US.UTF-8"}
    messages = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]
    lines = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    lines += b"\xff\xfe{garbage\n"
    lines += json.dumps({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).encode() + b"\n"
    # stdin stays open until the answer to id 2 came: the SDK drops requests still in
    # flight at end of input, which is not what this test is about.
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "mcp", "--workspace", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(lines)
    process.stdin.flush()
    by_id: dict[Any, Any] = {}
    timer = threading.Timer(60, process.kill)
    timer.start()
    try:
        while 2 not in by_id and (line := process.stdout.readline()):
            if line.strip():
                reply = json.loads(line)
                by_id[reply.get("id")] = reply
    finally:
        timer.cancel()
        process.stdin.close()
        stderr = process.stderr.read() if process.stderr else b""
        process.wait(timeout=30)
    assert {tool["name"] for tool in by_id[2]["result"]["tools"]} == TOOLS
    assert b"Traceback" not in stderr


def test_arguments_the_schema_refuses_are_typed_errors_naming_the_field(tmp_path: Path) -> None:
    # The SDK answered these with pydantic's text alone: no error_code, the value quoted.
    from tests.support.processes import cli_env

    workspace = tmp_path / "proj"
    workspace.mkdir()
    env = {**cli_env(tmp_path / "data"), "TURNGRAPH_LOG_LEVEL": "WARNING"}
    calls = {
        "recall": ({"query": 12345}, "query: Input should be a valid string"),
        "remember": ({"content": "note-qzx", "role": "robot-role"}, "role: Input should be"),
        "recap": ({"budget_tokens": -7}, "budget_tokens: Input should be greater than"),
        "forget": ({"scope": "galaxy-scope"}, "scope: Input should be"),
    }

    async def session() -> dict[str, mcp_types.CallToolResult]:
        async with Client(_server(env, workspace)) as client:
            return {name: await client.call_tool(name, args) for name, (args, _) in calls.items()}

    out = anyio.run(session)
    for name, (args, says) in calls.items():
        result = out[name]
        assert result.is_error, name
        content = result.structured_content or {}
        assert content.get("error_code") == "INVALID_REQUEST", (name, _text(result))
        assert says in content["user_message"] and content["remediation"], content
        for value in args.values():
            assert str(value) not in _text(result) + json.dumps(content), (name, value)
