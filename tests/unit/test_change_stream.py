"""The change-stream contract: versioned entries, validated where read."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas.changes import (
    CHANGE_FIELD,
    ChangeEntry,
    Embedding,
    MemoryKind,
    MemoryRecord,
    MemoryRemoval,
    MemoryUpsert,
    ScopeForgotten,
    StatusChange,
    decode_change,
    encode_change,
)
from schemas.errors import InvalidPayloadError
from schemas.scopes import Scope

WHEN = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def record(**fields: object) -> MemoryRecord:
    base: dict[str, object] = {
        "id": "e1",
        "text": "The retry test fails on main",
        "kind": MemoryKind.EPISODE,
        "scope": Scope.SESSION,
        "created_at": WHEN,
        "source_event_ids": ("e1",),
        "session_id": "s_1",
        "workspace": "ws_a",
        "user": "u_1",
    }
    return MemoryRecord.model_validate(base | fields)


@pytest.mark.parametrize(
    "entry",
    [
        MemoryUpsert(memory=record(entities=("rq", "pytest"), turn_index=3)),
        MemoryUpsert(memory=record(), embedding=Embedding(model="m", vector=(0.5, -1.0))),
        MemoryUpsert(
            memory=record(
                id="ws_a|Decision|x",
                kind=MemoryKind.FACT,
                scope=Scope.WORKSPACE,
                session_id=None,
                topic="Queues",
            )
        ),
        StatusChange(memory_id="m1", status="Superseded"),
        MemoryRemoval(memory_id="m1"),
        ScopeForgotten(scope=Scope.WORKSPACE, scope_key="ws_a"),
    ],
)
def test_every_entry_round_trips_as_redis_returns_it(entry: ChangeEntry) -> None:
    fields = encode_change(entry)
    assert set(fields) == {CHANGE_FIELD}
    assert json.loads(fields[CHANGE_FIELD])["schema_version"] == 1
    raw = {k.encode(): v.encode() for k, v in fields.items()}
    assert decode_change(raw) == entry


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"op": "upsert", "memory": "{}"},
        {CHANGE_FIELD: "not json"},
        {CHANGE_FIELD: json.dumps({"schema_version": 1, "op": "explode"})},
        {CHANGE_FIELD: json.dumps({"schema_version": 2, "op": "remove", "memory_id": "m"})},
        {CHANGE_FIELD: json.dumps({"op": "remove", "memory_id": "m"})},
        {CHANGE_FIELD: json.dumps({"schema_version": 1, "op": "upsert", "memory": {"id": "m"}})},
        {CHANGE_FIELD: json.dumps({"schema_version": 1, "op": "forget", "scope": "galaxy"})},
    ],
)
def test_malformed_entries_raise_a_typed_error(fields: dict[str, str]) -> None:
    with pytest.raises(InvalidPayloadError):
        decode_change(fields)


def test_errors_name_fields_never_values() -> None:
    secret = "sk-live-should-not-echo"
    bad = record().model_dump(mode="json") | {"scope": secret}
    raw = json.dumps({"schema_version": 1, "op": "upsert", "memory": bad})
    with pytest.raises(InvalidPayloadError) as caught:
        decode_change({CHANGE_FIELD: raw})
    assert secret not in str(caught.value)
    assert "memory.scope" in str(caught.value)


@pytest.mark.parametrize(
    "fields",
    [
        {"scope": Scope.USER, "user": None, "session_id": None},
        {"scope": Scope.SESSION, "workspace": None},
        {"source_event_ids": ()},
        {"text": "   "},
        {"created_at": datetime(2026, 1, 1)},
    ],
)
def test_a_memory_needs_provenance_its_scope_key_and_an_aware_time(fields: dict) -> None:
    with pytest.raises(ValueError):
        record(**fields)


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["schema_version", "op", "memory", "memory_id", "status", "scope"]),
        st.one_of(st.text(max_size=20), st.integers(), st.none()),
    )
)
def test_untrusted_entries_parse_or_fail_typed(body: dict[str, object]) -> None:
    try:
        entry = decode_change({CHANGE_FIELD: json.dumps(body)})
    except InvalidPayloadError:
        return
    assert entry.schema_version == 1
