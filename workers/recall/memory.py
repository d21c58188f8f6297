"""The record the recall index holds, made from the change stream's :class:`MemoryRecord`.

The wire contract (versioned, validated where read) is :mod:`schemas.changes`; this is the
index's own compact form of one memory, with entity names normalised to index keys.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from datetime import datetime
from types import MappingProxyType
from typing import Any, cast

from turngraph.schemas.changes import MemoryKind, MemoryRecord
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.memories import PromotionKind
from turngraph.schemas.scopes import Scope, ScopeValue
from turngraph.workers.embeddings.texts import speaker_text
from turngraph.workers.recall.text import entity_key

__all__ = [
    "RESTATEMENTS", "SHARED_EXTRAS_MAX", "SPAN_DIGESTS", "Memory", "MemoryKind",
    "normalise_entities",
]  # fmt: skip

SPAN_DIGESTS = frozenset({MemoryKind.SUMMARY, MemoryKind.RECAP})
"""Memories digested from a span of turns: their text, entities and provenance are the
union of their turns'. (A decision record is curated from summaries: it states a
decision, and the seed ranks it first for it.)"""

RESTATEMENTS = frozenset({MemoryKind.SUMMARY, MemoryKind.RECAP, MemoryKind.DECISION_RECORD})
"""Memories that say again what turns said: a span digest's words are its turns', a
decision record's its summaries'. They are searched, but are not counted in the corpus
statistics (``Memory.in_statistics``)."""

_OWNERSHIP_CONTEXT = PromotionKind.OWNERSHIP_CONTEXT.value
"""The promoted kind the system writes, one boilerplate sentence per scope."""

_SHARED_FIELDS = ("session_id", "workspace", "user", "status", "topic")
"""Fields whose few distinct values many memories repeat: interned."""

_NO_EXTRA: Mapping[str, str] = MappingProxyType({})
"""The one empty ``extra`` every memory without one shares."""

SHARED_EXTRAS_MAX = 4_096
"""Distinct ``extra`` mappings held for sharing; past it a memory keeps its own."""

_SHARED_EXTRAS: dict[tuple[tuple[str, object], ...], Mapping[str, str]] = {}


def _shared_extra(extra: Mapping[str, str]) -> Mapping[str, str]:
    """One read-only mapping per distinct ``extra``: a turn's is its role and speaker,
    which a few values repeat across a whole conversation, and a dict of two entries
    costs 184 bytes a memory (docs/operations.md, replica memory)."""
    if not extra:
        return _NO_EXTRA
    items = tuple(
        (key, sys.intern(value) if type(value) is str else value) for key, value in extra.items()
    )
    try:
        held = _SHARED_EXTRAS.get(items)
    except TypeError:  # an unhashable value: this memory keeps its own
        return MappingProxyType(dict(items))
    if held is None:
        held = MappingProxyType(dict(items))
        if len(_SHARED_EXTRAS) < SHARED_EXTRAS_MAX:
            _SHARED_EXTRAS[items] = held
    return held


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
    scope: ScopeValue
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
        # One string per distinct scope key, status or speaker (each memory parsed from
        # JSON brought its own copies: ~250 bytes a memory, docs/history.md).
        for name in _SHARED_FIELDS:
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, sys.intern(value))
        object.__setattr__(self, "extra", _shared_extra(self.extra))
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

    @property
    def in_statistics(self) -> bool:
        """Whether this memory counts in its partition's BM25 statistics (documents, mean
        length, document frequencies). What was said does: turns, facts, what a person
        promoted. A restatement (summary, recap, decision record) would count its turns'
        words a second time, and an ownership context is the same sentence once per
        session: counted, they moved every turn's weights (docs/history.md). They are
        still searched, by the turns' statistics."""
        return self.kind not in RESTATEMENTS and not self.is_ownership_context

    @property
    def is_ownership_context(self) -> bool:
        """The system's sentence of who owns a scope (one per session and workspace)."""
        return self.extra.get("memory_kind") == _OWNERSHIP_CONTEXT

    @property
    def is_tool_call(self) -> bool:
        """A tool call of a session (an edit, a command, a read): context of the turns
        around it, never an item of an answer (its text is a tool's input)."""
        return self.kind is MemoryKind.EPISODE and self.extra.get("role") == "tool"

    @property
    def searchable_text(self) -> str:
        """What the index analyses: the speaker's name (when known) and the text."""
        return speaker_text(self.text, self.extra.get("speaker"))

    def with_status(self, status: str) -> Memory:
        return replace(self, status=status)

    @classmethod
    def from_record(cls, record: MemoryRecord) -> Memory:
        """The index form of a validated change-stream memory (the same fields)."""
        values = {name: getattr(record, name) for name in _FIELDS}
        return cls(**{**values, "scope": cast(ScopeValue, record.scope.value)})

    def to_record(self) -> MemoryRecord:
        """The wire form (entities as the index keys them)."""
        values = {name: getattr(self, name) for name in _FIELDS}
        return MemoryRecord(**{**values, "scope": Scope(self.scope), "extra": dict(self.extra)})


_FIELDS = tuple(f.name for f in fields(Memory))
"""The fields a memory has in the index and on the wire (a test keeps them the same)."""


def normalise_entities(names: Any) -> tuple[str, ...]:
    """Entity keys, de-duplicated in first-seen order; empty keys dropped."""
    keys = (entity_key(str(name)) for name in names)
    return tuple(dict.fromkeys(key for key in keys if key))
