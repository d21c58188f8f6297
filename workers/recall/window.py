"""What the assistant already holds in its window is not what memory should answer with.

With ``conversation_context`` (or ``window_from_turn``) and a ``session_id``, the turns
of the current session already in the assistant's window are left out, and so is every
summary or recap made from that session alone; the context still resolves references
(``followups.py``), and a recap is searched only when the query asks where the work
stood. docs/recall.md ("Follow-ups, auto scope and the window").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from turngraph.schemas.recall import ConversationTurn
from turngraph.workers.recall.memory import Memory, MemoryKind

__all__ = ["MATCH_CHARS", "MIN_MATCH_CHARS", "SESSION_DISTILLED", "Window", "asks_for_recap"]

MATCH_CHARS = 160
"""Characters (whitespace collapsed) of a turn's start compared with a context turn's."""

MIN_MATCH_CHARS = 24
"""A context turn shorter than this is matched only in full (no prefix match)."""

SESSION_DISTILLED = frozenset({MemoryKind.SUMMARY, MemoryKind.RECAP})
"""Kinds distilled from one session: in the window when that session is the current one."""

_SPACE = re.compile(r"\s+")
_RECAP_QUESTION = re.compile(
    r"\b(recap|catch me up|where (?:did|were) (?:we|i) (?:leave|left|stop|stopped)|"
    r"left off|last session|previous session|what was i (?:doing|working on)|"
    r"where (?:are|were) we)\b",
    re.IGNORECASE,
)


def _start(text: str) -> str:
    return _SPACE.sub(" ", text[: 4 * MATCH_CHARS]).strip().lower()[:MATCH_CHARS]


def asks_for_recap(query: str) -> bool:
    """The query asks where the work stood: the one kind of question a recap answers."""
    return bool(_RECAP_QUESTION.search(query))


@dataclass(frozen=True, slots=True)
class Window:
    """The current session, the starts of the turns the context holds and the turn index
    from which the whole session is in the window (None: unknown)."""

    session_id: str | None
    starts: frozenset[str]
    recaps_wanted: bool
    from_turn: int | None = None

    @classmethod
    def of(
        cls,
        session_id: str | None,
        context: Sequence[ConversationTurn],
        query: str,
        from_turn: int | None = None,
    ) -> Window:
        starts = frozenset(s for s in (_start(turn.content) for turn in context) if s)
        known = bool(starts) or from_turn is not None
        return cls(session_id if known else None, starts, asks_for_recap(query), from_turn)

    def holds(self, memory: Memory) -> bool:
        """True when ``memory`` is already in the assistant's window (or is a recap the
        query did not ask for): recall leaves it out."""
        if memory.kind is MemoryKind.RECAP and not self.recaps_wanted:
            return True
        if self.session_id is None or memory.session_id != self.session_id:
            return False
        if memory.kind in SESSION_DISTILLED:
            return True
        if memory.kind is not MemoryKind.EPISODE:
            return False
        if (
            self.from_turn is not None
            and memory.turn_index is not None
            and memory.turn_index >= self.from_turn
        ):
            return True
        start = _start(memory.text)
        if start in self.starts:
            return True
        return any(
            len(s) >= MIN_MATCH_CHARS and (start.startswith(s) or s.startswith(start))
            for s in self.starts
        )
