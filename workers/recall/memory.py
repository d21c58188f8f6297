"""The record the recall index holds, and the change-stream payload that carries it.

Ingest and maintenance workers ``XADD`` one entry per change to ``settings.changes_stream``;
each entry has an ``op`` field and one JSON string field (``memory`` for an upsert, a small
object for the other ops). The recall worker applies them to its in-memory index.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal, cast

from schemas.errors import InvalidPayloadError
from workers.recall.text import entity_key

CHANGE_SCHEMA_VERSION = 1
"""Bumped on any incompatible change of the change-stream payload."""

MemoryScope = Literal["session", "workspace", "user"]


class MemoryKind(StrEnum):
    EPISODE = "episode"
    FACT = "fact"
    DECISION_RECORD = "decision_record"
    SUMMARY = "summary"
    PROMOTED = "promoted"


class ChangeOp(StrEnum):
    UPSERT = "upsert"
    REMOVE = "remove"
    STATUS = "status"
    FORGET = "forget"


@dataclass(frozen=True, slots=True)
class Memory:
    """One recallable item: an episode (turn), fact, summary, decision record or promotion.

    ``scope`` is the level it lives at: episodes live in their session (and so in its
    workspace), facts and decision records in a workspace, promoted memories may live at
    user level (``workspace`` is then ``None``). ``entities`` holds normalised names.
    """

    id: str
    text: str
    kind: MemoryKind
    scope: MemoryScope
    created_at: datetime
    source_event_ids: tuple[str, ...]
    session_id: str | None = None
    workspace: str | None = None
    user: str | None = None
    status: str = "Active"
    topic: str | None = None
    source_created_at: datetime | None = None
    entities: tuple[str, ...] = ()
    turn_index: int | None = None
    extra: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Index keys must match query n-grams, whichever constructor the caller used.
        object.__setattr__(self, "entities", normalise_entities(self.entities))
        if not self.id or not self.text.strip():
            raise InvalidPayloadError("memory needs an id and a non-empty text")
        if not self.source_event_ids:
            raise InvalidPayloadError("memory needs at least one source_event_id")
        if self.created_at.tzinfo is None:
            raise InvalidPayloadError("memory created_at must be timezone-aware")
        needed = {"session": self.session_id, "workspace": self.workspace, "user": self.user}
        if not needed[self.scope]:
            raise InvalidPayloadError(f"memory of scope {self.scope} needs its scope key")
        if self.scope == "session" and not self.workspace:
            raise InvalidPayloadError("a session memory needs its workspace")

    @property
    def reference_time(self) -> datetime:
        """The time recency decays from: when the source turn happened, else creation."""
        return self.source_created_at or self.created_at

    def with_status(self, status: str) -> Memory:
        return replace(self, status=status)

    def to_dict(self) -> dict[str, Any]:
        return {
            "v": CHANGE_SCHEMA_VERSION,
            "id": self.id,
            "text": self.text,
            "kind": self.kind.value,
            "scope": self.scope,
            "created_at": self.created_at.isoformat(),
            "source_event_ids": list(self.source_event_ids),
            "session_id": self.session_id,
            "workspace": self.workspace,
            "user": self.user,
            "status": self.status,
            "topic": self.topic,
            "source_created_at": (
                self.source_created_at.isoformat() if self.source_created_at else None
            ),
            "entities": list(self.entities),
            "turn_index": self.turn_index,
            "extra": dict(self.extra),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Memory:
        try:
            source_created = data.get("source_created_at")
            return cls(
                id=str(data["id"]),
                text=str(data["text"]),
                kind=MemoryKind(data.get("kind", "episode")),
                scope=_scope(data.get("scope", "session")),
                created_at=_parse_time(data["created_at"]),
                source_event_ids=tuple(str(e) for e in data["source_event_ids"]),
                session_id=_opt_str(data.get("session_id")),
                workspace=_opt_str(data.get("workspace")),
                user=_opt_str(data.get("user")),
                status=str(data.get("status") or "Active"),
                topic=_opt_str(data.get("topic")),
                source_created_at=_parse_time(source_created) if source_created else None,
                entities=normalise_entities(data.get("entities") or ()),
                turn_index=None if data.get("turn_index") is None else int(data["turn_index"]),
                extra={str(k): str(v) for k, v in (data.get("extra") or {}).items()},
            )
        except InvalidPayloadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidPayloadError(f"invalid memory payload: {type(exc).__name__}") from exc

    def to_change(self) -> dict[str, str]:
        """Stream fields for an upsert: ``XADD changes_stream * op upsert memory <json>``."""
        return {"op": ChangeOp.UPSERT.value, "memory": json.dumps(self.to_dict())}

    @classmethod
    def from_change(cls, fields: Mapping[Any, Any]) -> Memory:
        """The memory of an upsert entry; accepts the ``bytes`` keys redis-py returns."""
        change = Change.from_fields(fields)
        if change.memory is None:
            raise InvalidPayloadError("change entry is not an upsert")
        return change.memory


@dataclass(frozen=True, slots=True)
class Change:
    """A parsed change-stream entry. Which fields are set depends on ``op``."""

    op: ChangeOp
    memory: Memory | None = None
    memory_id: str | None = None
    status: str | None = None
    scope: MemoryScope | None = None
    scope_key: str | None = None

    @classmethod
    def remove(cls, memory_id: str) -> Change:
        return cls(op=ChangeOp.REMOVE, memory_id=memory_id)

    @classmethod
    def set_status(cls, memory_id: str, status: str) -> Change:
        return cls(op=ChangeOp.STATUS, memory_id=memory_id, status=status)

    @classmethod
    def forget(cls, scope: MemoryScope, key: str) -> Change:
        return cls(op=ChangeOp.FORGET, scope=scope, scope_key=key)

    def to_fields(self) -> dict[str, str]:
        if self.op is ChangeOp.UPSERT and self.memory is not None:
            return self.memory.to_change()
        body: dict[str, Any] = {"v": CHANGE_SCHEMA_VERSION}
        if self.op in (ChangeOp.REMOVE, ChangeOp.STATUS):
            body["id"] = self.memory_id
        if self.op is ChangeOp.STATUS:
            body["status"] = self.status
        if self.op is ChangeOp.FORGET:
            body.update(scope=self.scope, key=self.scope_key)
        return {"op": self.op.value, "change": json.dumps(body)}

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Change:
        decoded = {_text(k): _text(v) for k, v in fields.items()}
        try:
            op = ChangeOp(decoded.get("op", "upsert"))
            if op is ChangeOp.UPSERT:
                return cls(op=op, memory=Memory.from_dict(json.loads(decoded["memory"])))
            body = json.loads(decoded["change"])
            if op is ChangeOp.FORGET:
                return cls(op=op, scope=_scope(body["scope"]), scope_key=str(body["key"]))
            status = str(body["status"]) if op is ChangeOp.STATUS else None
            return cls(op=op, memory_id=str(body["id"]), status=status)
        except InvalidPayloadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise InvalidPayloadError(f"invalid change entry: {type(exc).__name__}") from exc


def normalise_entities(names: Any) -> tuple[str, ...]:
    """Entity keys, de-duplicated in first-seen order; empty keys dropped."""
    seen: dict[str, None] = {}
    for name in names:
        key = entity_key(str(name))
        if key:
            seen.setdefault(key, None)
    return tuple(seen)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes | bytearray) else str(value)


def _opt_str(value: Any) -> str | None:
    return None if value is None or value == "" else str(value)


def _scope(value: Any) -> MemoryScope:
    if value not in ("session", "workspace", "user"):
        raise InvalidPayloadError("unknown memory scope")
    return cast(MemoryScope, value)


def _parse_time(value: Any) -> datetime:
    parsed = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed
