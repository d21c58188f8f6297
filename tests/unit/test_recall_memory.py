from __future__ import annotations

import json
from datetime import datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from schemas.errors import InvalidPayloadError
from tests.support.recall import memory
from workers.recall.memory import Change, ChangeOp, Memory, MemoryKind


def test_change_payload_round_trips_every_field() -> None:
    original = memory(
        "m1",
        "We chose RQ for PDF rendering",
        kind=MemoryKind.DECISION_RECORD,
        status="DecisionRecord",
        topic="queues",
        entities=("rq", "pdf rendering"),
        turn_index=4,
    )
    fields = original.to_change()
    assert set(fields) == {"op", "memory"}
    assert isinstance(json.loads(fields["memory"]), dict)
    assert Memory.from_change(fields) == original


def test_from_change_accepts_the_bytes_redis_returns() -> None:
    original = memory("m1", "some text")
    raw = {k.encode(): v.encode() for k, v in original.to_change().items()}
    assert Memory.from_change(raw) == original


def test_entities_are_normalised_on_the_way_in() -> None:
    payload = memory("m1", "x").to_dict() | {"entities": ["Payments-API", "payments api", " "]}
    assert Memory.from_dict(payload).entities == ("payments api",)
    assert memory("m2", "x", entities=("RetryPolicy.max",)).entities == ("retrypolicy max",)


@pytest.mark.parametrize(
    "change",
    [
        Change.remove("m1"),
        Change.set_status("m1", "Superseded"),
        Change.forget("workspace", "ws_a"),
    ],
)
def test_other_ops_round_trip(change: Change) -> None:
    assert Change.from_fields(change.to_fields()) == change


def test_from_change_rejects_a_non_upsert() -> None:
    with pytest.raises(InvalidPayloadError):
        Memory.from_change(Change.remove("m1").to_fields())


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"op": "explode", "memory": "{}"},
        {"op": "upsert", "memory": "not json"},
        {"op": "upsert", "memory": json.dumps({"id": "m"})},
        {"op": "remove", "change": "{}"},
        {"op": "forget", "change": json.dumps({"scope": "galaxy", "key": "k"})},
    ],
)
def test_malformed_entries_raise_a_typed_error(fields: dict[str, str]) -> None:
    with pytest.raises(InvalidPayloadError):
        Change.from_fields(fields)


def test_a_memory_needs_provenance_and_its_scope_key() -> None:
    with pytest.raises(InvalidPayloadError):
        memory("m1", "text", source_event_ids=())
    with pytest.raises(InvalidPayloadError):
        memory("m1", "text", scope="user", user=None)
    with pytest.raises(InvalidPayloadError):
        memory("m1", "text", scope="session", workspace=None)


def test_naive_timestamps_are_read_as_utc() -> None:
    payload = memory("m1", "x").to_dict() | {"created_at": "2026-01-01T00:00:00"}
    assert Memory.from_dict(payload).created_at.tzinfo is not None


@given(st.dictionaries(st.sampled_from(["op", "memory", "change", "x"]), st.text(max_size=40)))
def test_untrusted_entries_parse_or_fail_typed(fields: dict[str, str]) -> None:
    try:
        change = Change.from_fields(fields)
    except InvalidPayloadError:
        return
    assert change.op in set(ChangeOp)


def test_reference_time_prefers_the_source_turn() -> None:
    item = memory("m1", "x", days_ago=3)
    assert isinstance(item.reference_time, datetime)
    assert item.reference_time == item.source_created_at
