"""The ingest → recall change stream: one versioned entry per change, as JSON.

Ingest and maintenance workers ``XADD`` one entry per change (``upsert``, ``status``,
``remove``, ``forget``, told apart by ``op``) in the field ``change``; every recall
replica tails the stream and applies each to its index. Entries are validated where
read (:func:`decode_change`); a reader rejects and counts a version it does not know
(:data:`CHANGE_SCHEMA_VERSION`). docs/architecture.md ("The change stream").
"""

from __future__ import annotations

import base64
import json
import struct
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    field_serializer,
    field_validator,
    model_validator,
)

from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.scopes import Scope
from turngraph.schemas.validation import invalid_fields

__all__ = [
    "CHANGE_FIELD", "CHANGE_SCHEMA_VERSION", "MAX_DIMENSION", "READABLE_VERSIONS", "ChangeEntry",
    "Embedding", "MemoryKind", "MemoryRecord", "MemoryRemoval", "MemoryStatus", "MemoryUpsert",
    "ScopeForgotten", "StatusChange", "decode_change", "encode_change",
]  # fmt: skip

CHANGE_SCHEMA_VERSION: Literal[2] = 2
"""Bumped on any incompatible change of the change-stream entries. Version 2 sends an
embedding's vector packed (:class:`Embedding`); version 1 sent it as a JSON list of
numbers, and readers still accept it (:data:`READABLE_VERSIONS`)."""

READABLE_VERSIONS = (1, 2)
"""Entry versions a reader applies: upgrade the recall replicas before the writers."""

MAX_DIMENSION = 8_192
"""Longest vector an entry may carry."""

CHANGE_FIELD = "change"
"""The one stream field of an entry; its value is the entry's JSON."""


class MemoryKind(StrEnum):
    """What a recallable memory is. Later kinds (summaries, decision records, recaps)
    reuse the same upsert entry."""

    EPISODE = "episode"
    FACT = "fact"
    DECISION_RECORD = "decision_record"
    SUMMARY = "summary"
    PROMOTED = "promoted"
    RECAP = "recap"


class MemoryStatus(StrEnum):
    ACTIVE = "Active"
    SUPERSEDED = "Superseded"


class MemoryRecord(BaseModel):
    """One recallable item, as the graph holds it.

    ``scope`` is the level it lives at: an episode (turn) in its session (and so in its
    workspace), facts and decision records in a workspace, a promoted memory may live at
    user level (``workspace`` is then ``None``). ``entities`` holds the display names of
    the entities it is about (sorted, for a stable wire form); readers normalise them.
    ``created_at`` is when the memory first existed, ``source_created_at`` when its
    latest source turn happened (recency decays from it).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(min_length=1, max_length=1_024)
    text: str = Field(min_length=1)
    kind: MemoryKind
    scope: Scope
    created_at: AwareDatetime
    source_event_ids: tuple[str, ...] = Field(min_length=1)
    session_id: str | None = None
    workspace: str | None = None
    user: str | None = None
    status: str = MemoryStatus.ACTIVE.value
    topic: str | None = None
    source_created_at: AwareDatetime | None = None
    entities: tuple[str, ...] = ()
    turn_index: int | None = None
    extra: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _scope_keys_present(self) -> MemoryRecord:
        if not self.text.strip():
            raise ValueError("text is blank")
        needed = {Scope.SESSION: self.session_id, Scope.WORKSPACE: self.workspace}
        needed[Scope.USER] = self.user
        if not needed[self.scope]:
            raise ValueError(f"a {self.scope.value} memory needs its scope key")
        if self.scope is Scope.SESSION and not self.workspace:
            raise ValueError("a session memory needs its workspace")
        return self


class Embedding(BaseModel):
    """A memory's vector and the model that made it (dimensions are the vector's length).

    On the wire (version 2) ``vector`` is packed: the base64 of its components as
    little-endian IEEE 754 float32, 4 bytes each. A 640-d vector is then 3.4 KB of JSON
    instead of ~7.7 KB of decimal numbers, and exact: the replicas keep float32 rows. A
    JSON list of numbers (version 1) is still read.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1, max_length=256)
    vector: tuple[float, ...] = Field(min_length=1, max_length=MAX_DIMENSION)

    @field_validator("vector", mode="before")
    @classmethod
    def _unpack(cls, value: object) -> object:
        if not isinstance(value, str):
            return value  # a list of numbers (version 1, or built in Python)
        try:
            raw = base64.b64decode(value, validate=True)
        except ValueError:
            raise ValueError("vector is neither numbers nor base64") from None
        if not raw or len(raw) % 4 or len(raw) > 4 * MAX_DIMENSION:
            raise ValueError("packed vector is not a whole number of float32 components")
        return struct.unpack(f"<{len(raw) // 4}f", raw)

    @field_validator("vector")
    @classmethod
    def _as_float32(cls, vector: tuple[float, ...]) -> tuple[float, ...]:
        """Components as float32 holds them, however they came: what is sent is what
        a reader gets."""
        try:
            return struct.unpack(f"<{len(vector)}f", struct.pack(f"<{len(vector)}f", *vector))
        except OverflowError:
            raise ValueError("vector component out of float32 range") from None

    @field_serializer("vector", when_used="json")
    def _pack(self, vector: tuple[float, ...]) -> str:
        return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


class _Entry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1, 2] = CHANGE_SCHEMA_VERSION


class MemoryUpsert(_Entry):
    """Insert or replace a memory (same ``memory.id``)."""

    op: Literal["upsert"] = "upsert"
    memory: MemoryRecord
    embedding: Embedding | None = None


class StatusChange(_Entry):
    """A memory's status changed; its text did not."""

    op: Literal["status"] = "status"
    memory_id: str = Field(min_length=1)
    status: str = Field(min_length=1)


class MemoryRemoval(_Entry):
    """One memory is gone."""

    op: Literal["remove"] = "remove"
    memory_id: str = Field(min_length=1)


class ScopeForgotten(_Entry):
    """Every memory of a session, workspace or user is gone."""

    op: Literal["forget"] = "forget"
    scope: Scope
    scope_key: str = Field(min_length=1)


ChangeEntry = Annotated[
    MemoryUpsert | StatusChange | MemoryRemoval | ScopeForgotten, Field(discriminator="op")
]
"""Any one entry of the change stream."""

_ENTRY: TypeAdapter[ChangeEntry] = TypeAdapter(ChangeEntry)


def encode_change(entry: ChangeEntry) -> dict[str, str]:
    """The stream fields of one entry: ``XADD <stream> * change <json>``."""
    return {CHANGE_FIELD: entry.model_dump_json()}


def decode_change(fields: Mapping[Any, Any]) -> ChangeEntry:
    """Validate one stream entry (``bytes`` keys and values as redis-py returns them).

    Raises :class:`InvalidPayloadError` naming the invalid fields, never their values.
    """
    raw = fields.get(CHANGE_FIELD, fields.get(CHANGE_FIELD.encode()))
    if raw is None:
        raise InvalidPayloadError(f"change entry has no {CHANGE_FIELD!r} field")
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InvalidPayloadError("change entry is not JSON") from None
    if isinstance(data, dict) and data.get("schema_version") not in READABLE_VERSIONS:
        raise InvalidPayloadError("change entry of an unknown schema_version")
    try:
        return _ENTRY.validate_python(data)
    except ValidationError as exc:
        where = invalid_fields(exc, "change")
        raise InvalidPayloadError(f"invalid change entry: {', '.join(where)}") from None
