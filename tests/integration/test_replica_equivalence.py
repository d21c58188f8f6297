"""A recall replica that bootstraps from the graph after ingest holds exactly the memories
a replica fed by the change stream holds (issue 9): both are built by one mapper."""

from __future__ import annotations

import dataclasses

import pytest

from schemas.turn_event import TurnEvent
from tests.support.conversation import CONVERSATION, ingest
from tests.support.turns import turn
from turngraph.app import build_recall_worker
from turngraph.clients import Clients
from workers.recall.memory import Memory, MemoryKind

pytestmark = pytest.mark.integration

LATER: list[TurnEvent] = [
    # The same decision again, in another session and with other entities: one memory,
    # two sources, the entities of both turns.
    turn("decision: retry uploads with a fixed delay in src/upload.py", 4, session="s4",
         minutes=120),
    turn("The fixed delay lives in src/retry.py next to the redis client, see PR #31", 5,
         session="s4", minutes=121),
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

    kinds = {m.kind for m in streamed.values()}
    assert {MemoryKind.EPISODE, MemoryKind.FACT, MemoryKind.PROMOTED} <= kinds
    decisions = [m for m in streamed.values() if m.kind is MemoryKind.FACT]
    assert {m.status for m in decisions} == {"Active", "Superseded"}
    repeated = [m for m in decisions if len(m.source_event_ids) == 2]
    assert repeated and repeated[0].entities and repeated[0].topic
