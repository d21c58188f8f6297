"""Where a summary may stand in the answer (issue 20: our own summaries must help, not
crowd out).

A summary outranks the turns it came from only where it answers better: a Draft that one
of its own turns outranks is left out (``summaries_below_their_turns``; a Final or a
Superseded one stays), and none stands before the best turns (``summaries_after``). An
ownership context answers only a question about who owns what or which branch
(``asks_about_ownership``): the scoring skips it for every other query. docs/recall.md
("Scoring", Digests).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Protocol, TypeVar

from turngraph.schemas.summaries import SummaryStatus
from turngraph.workers.recall.memory import Memory, MemoryKind

__all__ = [
    "AUTOMATIC", "P", "asks_about_ownership", "summaries_after", "summaries_below_their_turns",
]  # fmt: skip


class _Placed(Protocol):
    @property
    def memory(self) -> Memory: ...


P = TypeVar("P", bound=_Placed)

AUTOMATIC = SummaryStatus.DRAFT.value
"""The status of a summary the maintenance worker made on its own (docs/distill.md)."""


_OWNERSHIP_QUESTION = re.compile(
    r"\b(owns?|owners?|owned|ownership|whose|branch(?:es)?)\b", re.IGNORECASE
)


def asks_about_ownership(query: str) -> bool:
    """The query asks who owns a scope or which branch it was on."""
    return bool(_OWNERSHIP_QUESTION.search(query))


def summaries_below_their_turns(ranked: Sequence[P]) -> list[P]:
    """``ranked`` (best first) without the automatic (Draft) summaries one of whose own
    turns (a turn among its ``source_event_ids``) ranks above them."""
    out: list[P] = []
    turns_above: set[str] = set()
    for item in ranked:
        memory = item.memory
        if memory.kind is MemoryKind.SUMMARY and memory.status == AUTOMATIC:
            if turns_above.intersection(memory.source_event_ids):
                continue
        elif memory.kind is MemoryKind.EPISODE:
            turns_above.update(memory.source_event_ids)
        out.append(item)
    return out


def summaries_after(ranked: Sequence[P], leading: int) -> list[P]:
    """``ranked`` (best first) with no summary among the first ``leading`` places: a
    summary that ranked there moves down to just after them, keeping its order."""
    out: list[P] = []
    held: list[P] = []
    for item in ranked:
        if len(out) < leading and item.memory.kind is MemoryKind.SUMMARY:
            held.append(item)
            continue
        out.append(item)
        if len(out) == leading:
            out += held
            held = []
    return out + held
