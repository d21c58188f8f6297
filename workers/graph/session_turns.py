"""A session's turns as distillation reads them back from the graph, with what each mentions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

__all__ = ["Mention", "SessionTurn", "mentions_of", "parse_time"]


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity a turn mentions: its ontology type, name and (decisions) subject."""

    type: str
    name: str
    subject: str | None = None
    summary: str | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class SessionTurn:
    event_id: str
    session_id: str
    turn_index: int
    role: str
    content: str
    occurred_at: datetime
    workspace: str
    user: str
    mentions: tuple[Mention, ...] = ()
    git_branch: str | None = None
    speaker: str = ""

    def mentioned(self, *types: str) -> list[Mention]:
        return [m for m in self.mentions if m.type in types]


def parse_time(value: Any) -> datetime:
    """Stored timestamps are UTC ISO strings (``...Z``); drivers may hand back datetimes."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if hasattr(value, "to_native"):
        return parse_time(value.to_native())
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


def mentions_of(rows: Sequence[Any]) -> tuple[Mention, ...]:
    found: dict[tuple[str, str], Mention] = {}
    for row in rows:
        if not row or row[0] is None or row[1] is None:
            continue  # OPTIONAL MATCH without a mention
        label, name, subject, summary, status = (list(row) + [None] * 5)[:5]
        found.setdefault(
            (str(label), str(name)),
            Mention(str(label), str(name), subject or None, summary or None, status or None),
        )
    return tuple(sorted(found.values(), key=lambda m: (m.type, m.name)))
