"""A batch job's turns, stored once: the inbox entries admission took, under the job's id.

Admission renames its admission list to :func:`batch_key` in the ``MULTI`` that enqueues
the job (the entries move inside Redis; they are neither read back into the job nor
written twice), so the job's data is a :func:`reference`: ``{"turns": n, "tenant": t}``.
The ingest worker reads the entries when it runs the job (a tenant's qualified then,
:func:`admitted_event`), and after a run that wrote them lets them expire with the job's
hash (:data:`RESULT_TTL_S`: a job RQ runs again after a crash still finds them). Unrun,
they live :data:`BATCH_TTL_S`; a job that finds them gone dead-letters each turn
(counted, never silent). docs/producers.md ("One path").
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import redis
from pydantic import BaseModel, ConfigDict, Field, ValidationError
from rq.job import Job

from turngraph.schemas.defaults import BATCH_TTL_S, INGEST_FUNCTION, RESULT_TTL_S
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.keys import BATCH_TEMPLATE
from turngraph.schemas.tenants import check_tenant, qualify
from turngraph.schemas.turn_event import MAX_TURN_INDEX, Role, TurnEvent, stable_event_id
from turngraph.schemas.validation import invalid_fields

__all__ = [
    "MAX_TURNS", "Refusal", "admitted_event", "batch_key", "entry_id", "is_reference", "job_turns",
    "load", "reference", "release", "store_entries", "store_list",
]  # fmt: skip

MAX_TURNS = 4096
"""The most turns one stored batch holds (admission's ``MAX_TAKE``)."""

Refusal = tuple[str, str, str, str]
"""A stored entry the worker cannot ingest: (dead letter id, error, field, reason)."""

_SCOPE_FIELDS = ("event_id", "session_id", "workspace", "user")


class _EntryKey(BaseModel):
    """What admission reads of an inbox entry: its idempotency key, and what the default
    one is made of (the rest of the entry is validated by the worker that ingests it)."""

    model_config = ConfigDict(extra="ignore")

    event_id: str = Field(default="", pattern=r"^([A-Za-z0-9_-]{1,128})?$")
    session_id: str = Field(default="", pattern=r"^([A-Za-z0-9_-]{1,128})?$")
    turn_index: int = Field(default=0, ge=0, le=MAX_TURN_INDEX)
    role: Role | None = None


_ENTRY_KEY = _EntryKey.model_validate_json


def entry_id(tenant: str, raw: bytes) -> str:
    """The event id of an inbox entry as it will be stored (``TurnEvent``'s default when
    it names none; a tenant's qualified): an :class:`InvalidPayloadError` naming the
    fields when the entry has none (not a JSON object, a malformed id, no session, turn
    index and role to make one of)."""
    try:
        key = _ENTRY_KEY(raw)
    except ValidationError as exc:
        fields = invalid_fields(exc, "payload")
        raise InvalidPayloadError(f"invalid TurnEvent: {', '.join(fields)}") from None
    event_id = key.event_id
    if not event_id:
        if not key.session_id or key.role is None:
            raise InvalidPayloadError("invalid TurnEvent: session_id, role")
        event_id = stable_event_id(key.session_id, key.turn_index, key.role.value)
    return qualify(tenant, event_id) if tenant else event_id


def admitted_event(tenant: str, raw: bytes) -> TurnEvent:
    """The inbox entry as a turn (a tenant's with scope keys and event id qualified,
    validated again: a qualified key must still fit); an :class:`InvalidPayloadError`
    naming the fields otherwise."""
    try:
        event = TurnEvent.model_validate_json(raw)
        if not tenant:
            return event
        data = event.model_dump(mode="json")
        for name in _SCOPE_FIELDS:
            data[name] = qualify(tenant, data[name])
        return TurnEvent.model_validate(data)
    except ValidationError as exc:
        fields = invalid_fields(exc, "payload")
        raise InvalidPayloadError(f"invalid TurnEvent: {', '.join(fields)}") from None


def batch_key(job_id: str) -> str:
    """Where the turns of batch job ``job_id`` are stored."""
    return BATCH_TEMPLATE.format(job_id=job_id)


def reference(turns: int, tenant: str) -> dict[str, Any]:
    """The batch job's one argument: how many turns its key holds, and whose they are."""
    return {"turns": turns, "tenant": tenant}


def is_reference(value: Any) -> bool:
    """True for a well-formed :func:`reference` (what the worker's envelope accepts)."""
    if not isinstance(value, dict) or set(value) != {"turns", "tenant"}:
        return False
    turns, tenant = value["turns"], value["tenant"]
    if type(turns) is not int or not 1 <= turns <= MAX_TURNS or not isinstance(tenant, str):
        return False
    try:
        return tenant == "" or check_tenant(tenant) == tenant
    except ValueError:
        return False


def store_list(pipe: Any, source_list: str, job_id: str) -> None:
    """In admission's ``MULTI``: the admission list becomes the job's stored batch (one
    ``RENAME``, whatever its length)."""
    key = batch_key(job_id)
    pipe.rename(source_list, key)
    pipe.expire(key, BATCH_TTL_S)


def store_entries(pipe: Any, job_id: str, entries: Sequence[bytes]) -> None:
    """In admission's ``MULTI``: ``entries`` (a batch some entries were dropped from) as
    the job's stored batch."""
    key = batch_key(job_id)
    pipe.rpush(key, *entries)
    pipe.expire(key, BATCH_TTL_S)


def release(conn: Any, job_id: str) -> None:
    """After a run that wrote the batch: its turns expire with the finished job's hash."""
    conn.expire(batch_key(job_id), RESULT_TTL_S)


def load(
    conn: redis.Redis, job_id: str, ref: dict[str, Any]
) -> tuple[list[tuple[str, TurnEvent]], list[Refusal]]:
    """The stored turns of job ``job_id`` (a tenant's qualified), and a refusal for each
    entry that is not a valid turn and for each turn the key no longer holds."""
    tenant, turns = ref["tenant"], ref["turns"]
    entries: Any = conn.lrange(batch_key(job_id), 0, turns - 1)
    events, refused = [], []
    for index, raw in enumerate(entries):
        try:
            event = admitted_event(tenant, raw)
            events.append((event.event_id, event))
        except InvalidPayloadError as exc:
            fields = str(exc).partition(": ")[2] or "payload"
            letter_id = _letter_id(tenant, raw, job_id, index)
            refused.append((letter_id, "InvalidPayloadError", fields, "does not validate"))
    for index in range(len(entries), turns):
        refused.append((f"{job_id}:{index}", "EnvelopeError", "batch", "stored turns expired"))
    return events, refused


def _letter_id(tenant: str, raw: bytes, job_id: str, index: int) -> str:
    """The entry's event id (its admitted marker's), else its job and place in the batch."""
    try:
        return entry_id(tenant, raw)
    except (InvalidPayloadError, ValueError):
        return f"{job_id}:{index}"


def job_turns(conn: redis.Redis, job: Job) -> list[Any]:
    """An ingest batch job's turns as JSON values, whichever form the job carries them in
    (stored: a tenant's scope keys and event id qualified; unreadable entries as None); []
    for any other job. For the forget's purge and the chaos bench's accounting."""
    args = job.args
    if job.func_name != INGEST_FUNCTION or len(args) != 1:
        return []
    if isinstance(args[0], list):
        return list(args[0])
    if not is_reference(args[0]):
        return []
    tenant = args[0]["tenant"]
    turns: list[Any] = []
    entries: Any = conn.lrange(batch_key(job.id), 0, -1)
    for raw in entries:
        try:
            turn = json.loads(raw)
        except ValueError:
            turns.append(None)
            continue
        if tenant and isinstance(turn, dict):
            for name in _SCOPE_FIELDS:
                if isinstance(turn.get(name), str) and turn[name]:
                    turn[name] = qualify(tenant, turn[name])
        turns.append(turn)
    return turns
