"""The change-stream contract: versioned entries, validated where read."""

from __future__ import annotations

import base64
import json
import random
from datetime import UTC, datetime

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from turngraph.schemas.changes import (
    CHANGE_FIELD,
    CHANGE_SCHEMA_VERSION,
    MAX_DIMENSION,
    READABLE_VERSIONS,
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
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.scopes import Scope

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
    assert json.loads(fields[CHANGE_FIELD])["schema_version"] == CHANGE_SCHEMA_VERSION == 2
    raw = {k.encode(): v.encode() for k, v in fields.items()}
    assert decode_change(raw) == entry


@pytest.mark.parametrize(
    "fields",
    [
        {},
        {"op": "upsert", "memory": "{}"},
        {CHANGE_FIELD: "not json"},
        {CHANGE_FIELD: json.dumps({"schema_version": 1, "op": "explode"})},
        {CHANGE_FIELD: json.dumps({"schema_version": 3, "op": "remove", "memory_id": "m"})},
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
    assert entry.schema_version in READABLE_VERSIONS


def _upsert_json(vector: object, version: int = 2) -> dict[str, str]:
    memory = record().model_dump(mode="json")
    body = {"schema_version": version, "op": "upsert", "memory": memory}
    return {CHANGE_FIELD: json.dumps(body | {"embedding": {"model": "m", "vector": vector}})}


def test_a_vector_travels_packed_exactly_and_a_version_1_list_is_still_read() -> None:
    rng = random.Random(5)
    vector = tuple(rng.uniform(-1, 1) for _ in range(640))
    entry = MemoryUpsert(memory=record(), embedding=Embedding(model="m", vector=vector))
    fields = encode_change(entry)
    decoded = decode_change(fields)
    assert isinstance(decoded, MemoryUpsert) and decoded.embedding is not None
    assert decoded == entry  # float32 components, as sent
    assert decoded.embedding.vector == pytest.approx(vector, abs=1e-7)
    as_list = decode_change(_upsert_json(list(vector), version=1))
    assert isinstance(as_list, MemoryUpsert) and as_list.embedding == decoded.embedding
    listed = len(_upsert_json(list(vector))[CHANGE_FIELD])
    assert len(fields[CHANGE_FIELD]) < 0.5 * listed


@pytest.mark.parametrize(
    "vector",
    [
        "not base64!",
        base64.b64encode(b"abc").decode(),  # not a whole float32
        "",
        base64.b64encode(bytes(4 * (MAX_DIMENSION + 1))).decode(),
        [1e39],  # beyond float32
        [],
    ],
)
def test_a_malformed_vector_is_a_typed_error(vector: object) -> None:
    with pytest.raises(InvalidPayloadError) as caught:
        decode_change(_upsert_json(vector))
    assert "embedding.vector" in str(caught.value)
