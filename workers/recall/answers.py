"""The answer above its question (issue 37).

At ingest each memory gets an :class:`Act` (:func:`act_of`: a question, or what
``SETTLES`` one); at recall, for a question-shaped query (:func:`is_question`), what
settles weighs ``Ranking.settling_multiplier`` (``settled_asked_multiplier`` when
:func:`asks_what_was_settled`) and a question turn ``question_turn_multiplier``; a
question turn comes only with its answer (:func:`answer_of`, within
``Ranking.answer_reach`` turns), placed below it. docs/recall.md ("The answer above its
question").
"""

from __future__ import annotations

import re
from collections.abc import Callable
from enum import IntEnum

from turngraph.workers.recall.memory import Memory, MemoryKind

__all__ = ["Act", "act_of", "answer_of", "asks_what_was_settled", "is_question"]


class Act(IntEnum):
    """What a memory does in the conversation."""

    PLAIN = 0
    QUESTION = 1
    SETTLES = 2


_SETTLES = re.compile(
    r"(?:^|[.!?\n]\s*)(?:agreed|confirmed|decided|decision|approved|settled|sounds good|"
    r"works for me|that works|deal)\b"
    r"|\blet'?s\s+(?:go\s+with|use|stick\s+with|keep|pick|choose|switch\s+to|move\s+to)\b"
    r"|\bwe(?:'ll|\s+will|'re\s+going\s+to|\s+are\s+going\s+to)\s+"
    r"(?:use|go\s+with|stick\s+with|switch\s+to|keep)\b"
    r"|\b(?:we|i)(?:'ve|\s+have)?\s+(?:picked|chose|chosen|decided|settled\s+on|went\s+with|"
    r"gone\s+with|opted\s+for|agreed\s+on)\b"
    r"|\b(?:we're|we\s+are|i'm|i\s+am)\s+going\s+with\b|\bthe\s+decision\s+is\b",
    re.IGNORECASE,
)
"""Decisions and confirmations, in any sentence."""

_PREFERENCE = re.compile(
    r"\b(?:i|we)\s+(?:always|never|prefer|would\s+rather|'d\s+rather)\b"
    r"|\bi'd\s+rather\b|\bmy\s+preference\b|\bfrom\s+now\s+on\b"
    r"|(?:^|[.!?\n]\s*)(?:please\s+)?(?:always|never|do\s+not\s+ever|don'?t\s+ever)\s+\w",
    re.IGNORECASE,
)
"""Stated preferences and standing rules."""

_SENTENCE = re.compile(r"[^.!?\n]+[.!?]*")
_ASIDE_WORDS = 3
"""A sentence this short without "?" ("Hi Kate!", "Thanks.") does not make a turn more
than a question."""

_QUESTION_START = re.compile(
    r"^\s*(?:what|which|who|whom|whose|when|where|why|how|did|do|does|is|are|was|were|"
    r"can|could|should|shall|will|would|have|has|had)\b",
    re.IGNORECASE,
)


_SETTLED_ASKED = re.compile(
    r"\b(?:pick|picked|choose|chose|chosen|decide|decided|decision|agree|agreed|settle|"
    r"settled|prefer|prefers|preferred|preference|want|wants|wanted|rather|convention|"
    r"go\s+with|went\s+with|always|never)\b",
    re.IGNORECASE,
)
"""A question about what was decided or preferred ("which X did we pick", "how does the
user want Y")."""


_EMBEDDED_QUESTION = re.compile(
    r"\b(?:which|what|whether|if|how|when|why|who)\b[^.!?\n,;:]*", re.IGNORECASE
)
"""An embedded question ("I forget which bundler we settled on"): a decision's words
inside it ask, they do not settle."""


def _settles(text: str) -> bool:
    """A decision, confirmation or preference outside any embedded question."""
    asking = [m.span() for m in _EMBEDDED_QUESTION.finditer(text)]
    for pattern in (_SETTLES, _PREFERENCE):
        for found in pattern.finditer(text):
            start = found.start()
            if not any(low < start < high for low, high in asking):
                return True
    return False


def asks_what_was_settled(query: str) -> bool:
    """The question asks what was decided, agreed or preferred."""
    return bool(_SETTLED_ASKED.search(query))


def act_of(memory: Memory) -> Act:
    """The memory's act, from its kind and generic English cues in its text."""
    if memory.kind is MemoryKind.DECISION_RECORD or memory.status == "DecisionRecord":
        return Act.SETTLES
    if memory.kind is MemoryKind.PROMOTED:
        return Act.PLAIN if memory.is_ownership_context else Act.SETTLES
    if memory.kind is not MemoryKind.EPISODE and memory.kind is not MemoryKind.FACT:
        return Act.PLAIN  # a digest of a span retells; its turns carry the acts
    text = memory.text
    if _settles(text):
        return Act.SETTLES
    return Act.QUESTION if _only_questions(text) else Act.PLAIN


def _only_questions(text: str) -> bool:
    """Every sentence is a question, short asides apart, and there is one."""
    asked = False
    for sentence in _SENTENCE.findall(text):
        sentence = sentence.strip()
        if not sentence:
            continue
        if sentence.endswith("?"):
            asked = True
        elif len(sentence.split()) > _ASIDE_WORDS:
            return False
    return asked


def is_question(query: str) -> bool:
    """The query asks something (ends with "?" or opens with a question word)."""
    return query.rstrip().endswith("?") or bool(_QUESTION_START.match(query))


def answer_of(
    question: Memory,
    turn: Callable[[str, int], int | None],
    memory: Callable[[int], Memory | None],
    act: Callable[[int], Act],
    reach: int,
) -> int | None:
    """The turn that answers ``question`` (a turn whose act is ``QUESTION``): among the
    next ``reach`` turns of its session, the first that settles, else the first reply
    that is no question itself; ``None`` when nothing follows it (an open question).
    ``turn(session, index)`` finds a turn's key, ``memory`` and ``act`` read it."""
    session, index = question.session_id, question.turn_index
    if session is None or index is None:
        return None
    reply: int | None = None
    for step in range(1, reach + 1):
        key = turn(session, index + step)
        if key is None:
            continue
        found = memory(key)
        if found is None or found.is_tool_call:
            continue
        what = act(key)
        if what is Act.SETTLES:
            return key
        if reply is None and what is Act.PLAIN:
            reply = key
    return reply
