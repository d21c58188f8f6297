"""A recall replica that bootstraps from the graph after ingest holds exactly the memories
a replica fed by the change stream holds (issue 9): both are built by one mapper."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.turns import turn
from turngraph.app import build_graph_store, build_recall_worker
from turngraph.clients import Clients
from turngraph.schemas.scopes import Scope
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.graph.forget import forget_scope
from turngraph.workers.recall.memory import Memory, MemoryKind

pytestmark = pytest.mark.integration

LATER: list[TurnEvent] = [
    # The same decision again, in another session and with other entities: one memory,
    # two sources, the entities of both turns.
    turn("decision: retry uploads with a fixed delay in src/upload.py", 4, session="s4",
         minutes=120),
    turn("The fixed delay lives in src/retry.py next to the redis client, see PR #31", 5,
         session="s4", minutes=121),
    # A user-level preference stated again in another session: it outlives forgetting s2.
    turn("preference (user): answer in short bullet points", 6, session="s4", minutes=122),
    # Out of order: an older decision on the same subject arrives last (late arrival).
    turn("decision: retry uploads forever in src/upload.py", 9, session="s5", minutes=30),
]  # fmt: skip


def _fields(memory: Memory) -> dict[str, object]:
    return {f.name: getattr(memory, f.name) for f in dataclasses.fields(memory)}


def test_a_bootstrapped_replica_holds_what_the_stream_fed_one_holds(clients: Clients) -> None:
    fed = build_recall_worker(clients)
    assert fed.bootstrap() == 0  # empty graph: everything it learns comes from the stream
    ingest(clients, CONVERSATION)
    ingest(clients, LATER)
    ingest(clients, CONVERSATION[:2])  # re-delivery changes nothing
    # Forgetting a session prunes provenance elsewhere and makes a superseded decision
    # Active again: the stream says so, as the graph does.
    forget_scope(
        redis_client=clients.redis,
        store=build_graph_store(clients),
        scope=Scope.SESSION,
        key="s2",
        queues=[clients.settings.ingest_queue],
        changes_stream=clients.settings.changes_stream,
    )
    while fed.apply_pending_changes(block_ms=None):
        pass
    assert fed.counters.bad_changes == 0

    restarted = build_recall_worker(clients)
    # It notes the stream's end first, so everything it holds comes from the graph.
    assert restarted.bootstrap() == len(fed.index)
    assert restarted.counters.changes_applied == 0

    streamed, bootstrapped = fed.index.snapshot(), restarted.index.snapshot()
    assert sorted(streamed) == sorted(bootstrapped)
    for memory_id, memory in streamed.items():
        assert _fields(memory) == _fields(bootstrapped[memory_id]), memory_id

    s2 = {e.event_id for e in CONVERSATION if e.session_id == "s2"}
    assert not any(s2 & set(m.source_event_ids) for m in streamed.values())
    kinds = {m.kind for m in streamed.values()}
    assert {MemoryKind.EPISODE, MemoryKind.FACT, MemoryKind.PROMOTED} <= kinds
    decisions = [m for m in streamed.values() if m.kind is MemoryKind.FACT]
    assert {m.status for m in decisions} == {"Active", "Superseded"}
    # The decision s2 stated first and s4 repeated: only s4's turn is its source now.
    [fixed] = [m for m in decisions if "fixed delay" in m.text]
    assert fixed.source_event_ids == (LATER[0].event_id,) and fixed.entities and fixed.topic
