"""What the assistant already holds in its window is not what memory should answer with.

An editor sends recall the current session's recent turns as ``conversation_context``.
Those turns, and what was distilled only from the current session (its summaries, its
recap), are already in the assistant's window: returned again they fill the answer with
what the model has, and push out the earlier session that holds what it needs (measured
on the RealMem development personas, docs/history.md). The rule:

- with ``conversation_context`` and a ``session_id``, a turn of that session whose text
  is one of the context's turns is left out (matched on the start of the text: a rolling
  context cuts long turns);
- with ``window_from_turn`` and a ``session_id`` (an editor hook: the transcript since its
  last compaction is in the window), every turn of that session from that index on is left
  out, whatever the context holds;
- in either case so is every summary or recap made from that session alone;
- the context still resolves references and lifts memories tied to it (``followups.py``);
- a recap answers the recap op at session start, not every recall: it is searched only
  when the query asks where the work stood ("recap", "where did we leave off" …).
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
