"""The bridge's distilled-memory ops through the real pipeline: turns ingested into the
graph, a real ``turngraph worker maintenance`` process (RQ worker and ask admission)
answering, a recall worker following the change stream, and the bridge core that
``turngraph bridge`` and ``turngraph mcp`` serve, with raw scope keys."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from tests.support.distill import decision_events
from tests.support.maintenance import UNFINISHED, long_session, maintenance_worker, service_env
from tests.support.turns import T0, turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients, build_operations
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.operations.core import Operations
from turngraph.producers.scopes import ScopeHasher
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.recall.text import estimate_tokens

pytestmark = pytest.mark.integration

DEADLINE_MS = 60_000
"""Generous: the worker process starts while the first request waits."""


@dataclass
class Served:
    clients: Clients
    bridge: Operations
    hasher: ScopeHasher
    workspace: str

    def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        if op != "context":
            fields.setdefault("deadline_ms", DEADLINE_MS)
        return self.bridge.handle_line(json.dumps({"id": op, "op": op, **fields}))

    def keys(self, session: str) -> dict[str, str]:
        return {
            "session": self.hasher.session(session),
            "workspace": self.hasher.workspace(self.workspace),
            "user": self.hasher.user("alice"),
        }


def _wait_for(check: Callable[[], Any], timeout_s: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = check()
        if found:
            return found
        time.sleep(0.2)  # polling another process's progress
    raise AssertionError("timed out")


@pytest.fixture
def served(clients: Clients, tmp_path: Path) -> Iterator[Served]:
    settings = clients.settings
    assert settings.redis_url
    workspace = str(tmp_path / "proj")
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    ConsentStore(settings.data_dir).enable(
        hasher.workspace(workspace), consent_endpoint(settings.redis_url, settings.data_dir)
    )
    bridge = build_operations(settings)
    recall = build_recall_worker(clients)
    recall.bootstrap()
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    try:
        with maintenance_worker(service_env(settings)):
            yield Served(clients, bridge, hasher, workspace)
    finally:
        bridge.close()
        recall.stop()
        thread.join(timeout=10)


def test_summarize_then_summary_context_and_promote(served: Served) -> None:
    keys = served.keys("chat-decisions")
    events = decision_events(session=keys["session"], workspace=keys["workspace"],
                             user=keys["user"])  # fmt: skip
    build_pipeline(served.clients, extractor=OfflineExtractor()).ingest(events)

    made = served.ask("summarize", session_id="chat-decisions", last_n=4)
    assert made["success"] is True, made
    summary = made["summary"]
    assert summary["status"] == "Final" and summary["session_id"] == keys["session"]
    assert summary["source_event_ids"] == [e.event_id for e in events[-4:]]
    assert any("RQ" in d for d in summary["content"]["decisions"]), summary
    for section in ("Topic:", "Context:", "Decisions:", "Rationale:", "OpenQuestions:",
                    "NextSteps:", "References:", "TimeScope:"):  # fmt: skip
        assert section in made["text"]
    assert "producers/enqueue.lua" in made["text"]

    full = served.ask("summary", memory_id=summary["id"])
    assert full["success"] is True and full["kind"] == "summary", full
    assert full["text"] == made["text"] and full["summary"] == summary
    missing = served.ask("summary", memory_id="sum_nothing_here")
    assert missing["error_code"] == "NOT_FOUND"

    # The rolling context, kept by the maintenance jobs the ingest triggered.
    def context() -> dict[str, Any] | None:
        reply = served.ask("context", session_id="chat-decisions")
        done = reply.get("available") and reply["recent"][-1]["turn_index"] == len(events) - 1
        return reply if done else None

    rolling = _wait_for(context)
    assert [t["turn_index"] for t in rolling["recent"]] == [6, 7, 8, 9]
    assert rolling["recent"][-1]["content"] == events[-1].content
    assert rolling["summarized_through"] == 5
    assert len(rolling["summary"].split()) <= 200 and rolling["tokens"] <= 1_100
    assert "dramatiq" in rolling["summary"].casefold()
    sent = rolling["conversation_context"]
    assert sent[0]["role"] == "system" and rolling["summary"] in sent[0]["content"]
    assert len(sent) == 5 and estimate_tokens(json.dumps(sent)) <= 1_100
    recalled = served.ask(
        "recall", query="which job queue?", workspace=served.workspace,
        conversation_context=sent, deadline_ms=5_000,
    )  # fmt: skip
    assert recalled["success"] is True, recalled

    # Promote, then recall finds it; a secret-looking text is refused.
    promoted = served.ask(
        "promote", kind="preference", text="Answers use British English spelling.",
        workspace=served.workspace, user="alice", session_id="chat-decisions", scope="user",
    )  # fmt: skip
    assert promoted["success"] is True, promoted
    memory = promoted["memory"]
    assert memory["scope"] == "user" and memory["user"] == keys["user"]
    assert memory["source_event_ids"] == [events[-1].event_id]

    def recall_finds_it() -> dict[str, Any] | None:
        reply = served.ask(
            "recall", query="which spelling do answers use?", user="alice",
            workspace=served.workspace, deadline_ms=5_000,
        )  # fmt: skip
        hits = [r for r in reply.get("results", []) if r.get("memory_id") == memory["id"]]
        return hits[0] if hits else None

    hit = _wait_for(recall_finds_it, 30)
    assert "British English" in hit["text"] and hit["source_event_ids"] == [events[-1].event_id]
    secret = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
    refused = served.ask(
        "promote", kind="procedure", text=f"Deploy with OPENAI_API_KEY={secret}",
        workspace=served.workspace, user="alice", session_id="chat-decisions",
    )  # fmt: skip
    assert refused["error_code"] == "REFUSED" and secret not in json.dumps(refused)
    records, _, _ = served.clients.graph.execute_query(
        "MATCH (m:Memory) WHERE m.text CONTAINS 'sk-proj' RETURN count(m) AS n",
        database_=served.clients.graph_database,
    )
    assert records[0]["n"] == 0


def test_recap_of_the_previous_long_session(served: Served) -> None:
    long_keys = served.keys("chat-long")
    events = long_session(long_keys["session"], long_keys["workspace"], long_keys["user"], T0)
    assert len(events) > 200 and sum(e.role == "tool" for e in events) >= 100
    now_keys = served.keys("chat-now")
    later = T0 + timedelta(days=1)
    current = [
        turn("Where did we leave the token cache?", 0, session=now_keys["session"],
             workspace=now_keys["workspace"], user=now_keys["user"],
             minutes=int((later - T0).total_seconds() // 60)),
    ]  # fmt: skip
    pipeline = build_pipeline(served.clients, extractor=OfflineExtractor())
    for start in range(0, len(events), 100):
        pipeline.ingest(events[start : start + 100])
    pipeline.ingest(current)

    reply = served.ask(
        "recap", workspace=served.workspace, current_session_id="chat-now", budget_tokens=600
    )
    assert reply["success"] is True, reply
    assert reply["session_id"] == long_keys["session"]
    recap = reply["recap"]
    assert recap["turns"] == len(events) and recap["tokens"] <= 600
    assert estimate_tokens(reply["text"]) <= 600
    assert "RAWOUT" not in reply["text"] and "lorem ipsum" not in reply["text"]
    last = reply["text"].splitlines()[-1]
    assert last.startswith("Where we stopped") and "token cache" in last, last
    assert UNFINISHED.split(",")[0].removeprefix("Next: ") in last

    latest = served.ask("recap", workspace=served.workspace, budget_tokens=200)
    assert latest["session_id"] == now_keys["session"]  # no current session: the latest
    named = served.ask("recap", workspace=served.workspace, session_id="chat-long")
    assert named["session_id"] == long_keys["session"]
    nothing = served.ask("recap", workspace=str(Path(served.workspace).parent / "empty"))
    assert nothing["error_code"] == "NOT_FOUND"


def test_ops_fail_open_without_a_maintenance_worker(clients: Clients) -> None:
    bridge = build_operations(clients.settings)
    try:
        started = time.monotonic()
        reply = bridge.handle_line(
            json.dumps({"op": "summarize", "session_id": "chat", "deadline_ms": 300})
        )
        took = time.monotonic() - started
        assert reply["error_code"] == "DEADLINE_EXCEEDED" and took < 3.0
        context = bridge.handle_line(json.dumps({"op": "context", "session_id": "chat"}))
        assert context == {"success": True, "available": False, "conversation_context": [],
                           "summary": "", "summarized_through": -1, "recent": [],
                           "tokens": 0}  # fmt: skip
    finally:
        bridge.close()
