"""One set of assertions for every DistillStore method: the Bolt store on the real server and
the in-memory fake kept in the package, each over the turns its graph store ingested."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.contract.test_graph_store import batch_of, bolt_store, memory_store
from tests.support.conversation import CONVERSATION
from tests.support.memory_distill import InMemoryDistillStore
from turngraph.workers.graph.distill_store import (
    BoltDistillStore,
    DistillStore,
    StoredJson,
    SummarySpan,
)

CREATED = "2026-01-05T10:00:00Z"


@dataclass
class Stores:
    distill: DistillStore
    ids: dict[tuple[str, int], str]
    """(session, turn index) -> event id of CONVERSATION's turns."""


@pytest.fixture(params=["memory", pytest.param("bolt", marks=pytest.mark.integration)])
def stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    graph = memory_store() if request.param == "memory" else bolt_store(request)
    graph.write(batch_of(CONVERSATION))
    if request.param == "memory":
        distill: DistillStore = InMemoryDistillStore(graph)  # type: ignore[arg-type]
    else:
        clients = request.getfixturevalue("clients")
        distill = BoltDistillStore(clients.graph, clients.graph_database)
    yield Stores(distill, {(e.session_id, e.turn_index): e.event_id for e in CONVERSATION})


def summary_row(uid: str, session: str, last_turn: int, **changes: Any) -> dict[str, Any]:
    row: dict[str, Any] = {
        "uid": uid, "created_at": CREATED, "status": "Provisional", "topic": "uploads",
        "topic_id": "uploads", "topic_key": "w1|uploads", "plan_id": None,
        "session_id": session, "workspace": "w1", "user": "u1", "first_turn": 0,
        "last_turn": last_turn, "time_start": CREATED, "time_end": CREATED,
        "method": "extractive", "text": "uploads retry", "summary": f'{{"id": "{uid}"}}',
        "memory": "{}", "source_event_ids": [], "decision_event_ids": [],
    }  # fmt: skip
    return {**row, **changes}


def memory_row(uid: str, text: str, sources: list[str]) -> dict[str, Any]:
    return {
        "uid": uid, "created_at": CREATED, "kind": "preference", "status": "Active",
        "scope": "workspace", "scope_key": "w1", "session_id": None, "workspace": "w1",
        "user": "u1", "topic": "preference", "text": text, "memory": "{}",
        "source_event_ids": sources,
    }  # fmt: skip


def test_turns_are_read_back_in_order_with_what_they_mention(stores: Stores) -> None:
    store = stores.distill
    turns = store.session_turns("s1")
    assert [t.turn_index for t in turns] == [0, 1, 2]
    assert [t.event_id for t in turns] == [stores.ids[("s1", i)] for i in range(3)]
    assert turns[0].workspace == "w1" and turns[1].role == "assistant"
    assert "src/upload.py" in {m.name for m in turns[0].mentions}
    assert [t.turn_index for t in store.session_turns("s1", 1, 1)] == [1]
    assert store.session_turns("nobody") == []
    assert store.last_turn_index("s1") == 2 and store.last_turn_index("nobody") is None


def test_the_latest_other_session_of_a_workspace(stores: Stores) -> None:
    store = stores.distill
    assert store.latest_session("w1") == "s2"
    assert store.latest_session("w1", current="s2") == "s1"
    assert store.latest_session("w2", current="s3") is None


def test_turns_by_event_id_leave_out_missing_ones(stores: Stores) -> None:
    wanted = [stores.ids[("s2", 1)], "no-such-event", stores.ids[("s1", 0)]]
    turns = stores.distill.turns_by_event_id(wanted)
    assert [(t.session_id, t.turn_index) for t in turns] == [("s1", 0), ("s2", 1)]
    assert turns[1].content.startswith("preference (user)")


def test_summaries_are_replaced_by_uid_and_found_by_session_and_topic(stores: Stores) -> None:
    store = stores.distill
    sources = [stores.ids[("s1", 0)], stores.ids[("s1", 1)]]
    store.upsert_summary(summary_row("sum_a", "s1", 1, source_event_ids=sources))
    store.upsert_summary(summary_row("sum_a", "s1", 1, summary='{"id": "sum_a", "v": 2}'))
    store.upsert_summary(summary_row("sum_b", "s2", 0, topic_id="other", topic_key="w1|other"))
    assert store.summary("sum_a") == StoredJson('{"id": "sum_a", "v": 2}', "Provisional")
    assert store.summary("nothing") is None
    assert store.session_summaries("s1") == [SummarySpan("sum_a", 0, 1, "Provisional")]
    assert store.workspace_topics("w1") == ["other", "uploads"]
    assert store.workspace_topics("w2") == []
    assert [s.json for s in store.topic_summaries("w1|uploads")] == ['{"id": "sum_a", "v": 2}']
    assert store.workspaces_with_open_summaries() == ["w1"]
    topics = store.open_topics("w1")
    assert [(t.topic_id, t.open) for t in topics] == [("other", 1), ("uploads", 1)]
    assert topics[0].oldest.isoformat() == "2026-01-05T10:00:00+00:00"


def test_a_final_summary_replaces_the_drafts_of_its_span(stores: Stores) -> None:
    store = stores.distill
    for uid, last in (("sum_d1", 1), ("sum_d2", 2), ("sum_f", 2)):
        store.upsert_summary(summary_row(uid, "s1", last, status="Draft"))
    changed = store.replace_drafts(["sum_d1", "sum_f", "gone"], final_uid="sum_f")
    assert sorted(changed) == [("sum_d1", "Superseded"), ("sum_f", "Final")]
    spans = {s.uid: s.status for s in store.session_summaries("s1")}
    assert spans == {"sum_d1": "Superseded", "sum_d2": "Draft", "sum_f": "Final"}
    assert store.replace_drafts(["sum_d1"], final_uid="sum_f") == []  # no Draft left there


def test_a_decision_record_supersedes_its_summaries(stores: Stores) -> None:
    store = stores.distill
    store.upsert_summary(summary_row("sum_a", "s1", 1))
    store.upsert_summary(summary_row("sum_b", "s2", 1))
    record = {
        "uid": "rec_1", "created_at": CREATED, "topic": "uploads", "topic_id": "uploads",
        "topic_key": "w1|uploads", "plan_id": None, "workspace": "w1", "user": "u1",
        "current_decision": "fixed delay", "updated_at": CREATED, "text": "record",
        "record": '{"id": "rec_1"}', "memory": "{}", "source_event_ids": [],
        "summary_uids": ["sum_a", "sum_b"],
    }  # fmt: skip
    store.upsert_decision_record(record)
    assert store.decision_record("rec_1") == StoredJson('{"id": "rec_1"}', "Final")
    assert store.decision_record("sum_a") is None
    assert {s.status for s in store.topic_summaries("w1|uploads")} == {"Superseded"}
    assert store.workspaces_with_open_summaries() == [] and store.open_topics("w1") == []


def test_a_promoted_memory_is_written_once(stores: Stores) -> None:
    store = stores.distill
    assert not store.memory_exists("mem_1")
    store.upsert_memory(memory_row("mem_1", "answer in bullets", [stores.ids[("s2", 1)]]))
    store.upsert_memory(memory_row("mem_1", "changed later", [stores.ids[("s2", 1)]]))
    assert store.memory_exists("mem_1")
    assert store.memory_text("mem_1") == "answer in bullets"
    assert store.memory_text("nothing") is None


def test_a_recap_is_replaced_by_the_next(stores: Stores) -> None:
    store = stores.distill
    store.upsert_recap(memory_row("recap_s1", "first recap", []))
    store.upsert_recap(memory_row("recap_s1", "second recap", []))
    assert store.memory_text("recap_s1") == "second recap"
