"""Where a summary may stand in the answer (issue 20: our own summaries must help, not
crowd out).

A summary is a digest of a span of turns: its text is taken from them and it carries all
of them as provenance. It earns a place after the best turns, not before them: ranked
first, it stands for its whole span (a median of 6 turns, up to 20) while its session
held the answer less often than the best turn's did (RealMem dev: 23 % against 37 %).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

from turngraph.workers.recall.memory import Memory, MemoryKind


class _Placed(Protocol):
    @property
    def memory(self) -> Memory: ...


P = TypeVar("P", bound=_Placed)


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
