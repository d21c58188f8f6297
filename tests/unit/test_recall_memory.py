from __future__ import annotations

from datetime import datetime

import pytest

from tests.support.recall import memory
from turngraph.schemas.changes import MemoryUpsert, decode_change, encode_change
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.workers.recall.memory import Memory, MemoryKind


def test_a_memory_round_trips_through_the_change_stream() -> None:
    original = memory(
        "m1",
        "We chose RQ for PDF rendering",
        kind=MemoryKind.DECISION_RECORD,
        status="DecisionRecord",
        topic="queues",
        entities=("rq", "pdf rendering"),
        turn_index=4,
    )
    raw = {
        k.encode(): v.encode()
        for k, v in encode_change(MemoryUpsert(memory=original.to_record())).items()
    }
    entry = decode_change(raw)
    assert isinstance(entry, MemoryUpsert)
    assert Memory.from_record(entry.memory) == original


def test_entities_are_normalised_on_the_way_in() -> None:
    record = (
        memory("m1", "x")
        .to_record()
        .model_copy(update={"entities": ("Payments-API", "payments api", " ")})
    )
    assert Memory.from_record(record).entities == ("payments api",)
    assert memory("m2", "x", entities=("RetryPolicy.max",)).entities == ("retrypolicy max",)


def test_a_memory_needs_provenance_and_its_scope_key() -> None:
    with pytest.raises(InvalidPayloadError):
        memory("m1", "text", source_event_ids=())
    with pytest.raises(InvalidPayloadError):
        memory("m1", "text", scope="user", user=None)
    with pytest.raises(InvalidPayloadError):
        memory("m1", "text", scope="session", workspace=None)


def test_reference_time_prefers_the_source_turn() -> None:
    item = memory("m1", "x", days_ago=3)
    assert isinstance(item.reference_time, datetime)
    assert item.reference_time == item.source_created_at


def test_the_index_memory_and_the_wire_record_have_the_same_fields() -> None:
    from dataclasses import fields

    from turngraph.schemas.changes import MemoryRecord

    assert {f.name for f in fields(Memory)} == set(MemoryRecord.model_fields)


def _with_extra(memory_id: str, extra: dict[str, str]) -> Memory:
    record = memory(memory_id, "x").to_record().model_copy(update={"extra": extra})
    return Memory.from_record(record)


def test_memories_with_the_same_role_and_speaker_share_one_read_only_extra() -> None:
    first = _with_extra("m1", {"role": "user", "speaker": "Ann"})
    second = _with_extra("m2", {"role": "user", "speaker": "Ann"})
    other = _with_extra("m3", {"role": "user", "speaker": "Bo"})
    assert first.extra is second.extra  # one mapping, not 184 bytes a memory
    assert other.extra == {"role": "user", "speaker": "Bo"} and other.extra is not first.extra
    with pytest.raises(TypeError):
        first.extra["speaker"] = "Eve"  # type: ignore[index]
    assert first.with_status("Superseded").extra is first.extra
    assert first.to_record().extra == {"role": "user", "speaker": "Ann"}
