"""Wire models on untrusted input: valid or a pydantic ValidationError, nothing else."""

from __future__ import annotations

import contextlib
import json
import math
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ValidationError

from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.graph.batch_plan import _episode_row, iso

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=15,
)

TURN_FIELDS = {
    "session_id": st.text(max_size=20) | st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True),
    "workspace": st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True) | JSON,
    "user": st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True) | JSON,
    "turn_index": st.integers(min_value=-5, max_value=20_000_000) | JSON,
    "role": st.sampled_from(["user", "assistant", "system", "tool", "robot"]) | JSON,
    "content": st.text(max_size=50) | JSON,
    "occurred_at": st.sampled_from(["2026-11-21T05:00:00Z", "2026-11-21T05:00:00", "soon"]),
    "client": st.fixed_dictionaries({"name": st.text(max_size=5)}) | JSON,
    "importance": st.floats(allow_nan=True) | JSON,
    "tags": st.lists(st.text(max_size=5), max_size=60) | JSON,
    "event_id": st.text(max_size=20) | JSON,
    "references": st.lists(
        st.fixed_dictionaries({"kind": st.sampled_from(["file", "x"]), "value": st.text()}),
        max_size=3,
    )
    | JSON,
}
RECALL_FIELDS = {
    "query": st.text(max_size=30) | JSON,
    "max_results": st.integers(min_value=-100, max_value=1000) | JSON,
    "max_tokens": st.integers(min_value=-100, max_value=10**6) | JSON,
    "half_life_days": st.floats(allow_nan=True) | JSON,
    "scopes": st.lists(st.sampled_from(["session", "workspace", "user", "auto", "x"])) | JSON,
    "deadline_ms": st.integers(min_value=-5, max_value=10**6) | JSON,
    "workspace": st.from_regex(r"[A-Za-z0-9_-]{1,20}", fullmatch=True) | JSON,
    "conversation_context": st.lists(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "bot"]), "content": st.text()}),
        max_size=3,
    )
    | JSON,
}


def _check(model: type[BaseModel], data: Any) -> None:
    try:
        parsed = model.model_validate(data)
    except ValidationError as exc:
        for error in exc.errors(include_input=False, include_url=False):
            assert error["loc"] is not None and error["msg"]
        return
    # anything accepted survives a JSON round trip unchanged
    assert model.model_validate_json(parsed.model_dump_json()) == parsed


@settings(max_examples=300)
@given(st.fixed_dictionaries({}, optional=TURN_FIELDS) | JSON)
def test_turn_event_input_is_valid_or_a_validation_error(data: Any) -> None:
    _check(TurnEvent, data)


@settings(max_examples=300)
@given(st.fixed_dictionaries({}, optional=RECALL_FIELDS) | JSON)
def test_recall_request_input_is_valid_or_a_validation_error(data: Any) -> None:
    _check(RecallRequest, data)


@given(st.text(max_size=200))
def test_raw_json_text_is_valid_or_a_validation_error(text: str) -> None:
    for model in (TurnEvent, RecallRequest, RecallResponse):
        with contextlib.suppress(ValidationError):
            model.model_validate_json(text)


def test_accepted_turn_events_have_valid_ids() -> None:
    event = TurnEvent.model_validate(
        json.loads(
            '{"session_id": "s", "workspace": "w", "user": "u", "turn_index": 1, "role": "user",'
            ' "content": "c", "occurred_at": "2026-11-21T05:00:00Z", "client": {"name": "x"}}'
        )
    )
    assert event.event_id.startswith("t_") and len(event.event_id) <= 128


OFFSETS = st.timedeltas(
    min_value=-timedelta(hours=23, minutes=59), max_value=timedelta(hours=23, minutes=59)
)
NUMBERS = st.floats() | st.integers(min_value=-(10**30), max_value=10**30) | st.just(10**400)


@settings(max_examples=400)
@given(
    moment=st.datetimes(min_value=datetime(1, 1, 1), max_value=datetime(9999, 12, 31)),
    offset=OFFSETS.map(lambda d: timezone(d - timedelta(microseconds=d.microseconds))),
    turn_index=NUMBERS,
    importance=NUMBERS,
)
def test_an_accepted_turn_is_one_the_writer_can_store(
    moment: datetime, offset: timezone, turn_index: Any, importance: Any
) -> None:
    data = {
        "session_id": "s",
        "workspace": "w",
        "user": "u",
        "turn_index": turn_index,
        "role": "user",
        "content": "c",
        "occurred_at": moment.replace(tzinfo=offset).isoformat(),
        "client": {"name": "x"},
        "importance": importance,
    }
    try:
        event = TurnEvent.model_validate_json(json.dumps(data))
    except ValidationError as exc:
        assert {e["loc"][0] for e in exc.errors()} <= {"turn_index", "importance", "occurred_at"}
        return
    row = _episode_row(event, iso(datetime.now(UTC)))
    assert len(row["occurred_at"]) == len("2026-11-21T05:00:00.000000Z")
    assert math.isfinite(row["importance"]) and 0 <= row["turn_index"] <= 10_000_000
