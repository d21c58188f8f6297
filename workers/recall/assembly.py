"""Where a summary may stand in the answer (issue 20: our own summaries must help, not
crowd out).

A summary is a digest of a span of turns: its text is taken from them and it carries all
of them as provenance. Two rules:

- It outranks the turns it came from only where it answers better: an automatic summary
  (Draft) that one of its own turns outranks is left out (``summaries_below_their_turns``).
  That turn answered better and is in the answer; the summary would only add the rest of
  its span as places. A Final was asked for ("summarize and store the last N turns") and a
  Superseded one is returned only to a caller asking for the history: both stay.
- It earns a place after the best turns, not before them: ranked first, it stands for
  its whole span while its session held the answer less often than the best turn's did
  (``summaries_after``; figures in docs/history.md).

An ownership context (one sentence the maintenance worker writes per session and per
workspace: who owns the scope, its git branch) answers a question about who owns what or
which branch, not one about what was said: it is left out of every other answer
(``asks_about_ownership``, ``Memory.is_ownership_context``: the scoring skips it, so it
takes no place in the packing pool either). One per session, they are near-duplicates:
packed, they merged into one result carrying the opening turn of every session that
matched.
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
