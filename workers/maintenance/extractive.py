"""The offline summarizer: a ConversationSummary's sections picked from the turns.

Nothing is generated: every bullet is a sentence of the conversation (shortened), a
decision or directive extraction found, or a list of what was mentioned. Decisions come
from the Decision entities the turns mention (the extractor found them: "we decided …",
"let's go with …", ``decision:``) and from memory directives; rationale and open questions
are sentences with the cues of ``workers.maintenance.text``, next steps sentences that
label work as still to do or where a speaker takes it on (``is_next_step``: a requirement
said of the system is no step), the ones near a decision or late in the segment first.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Sequence

from turngraph.schemas.summaries import MAX_ITEM_CHARS, SummaryContent, SummaryReferences
from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.maintenance.text import (
    OPEN_CUES,
    RATIONALE_CUES,
    content_words,
    has_cue,
    is_check_in,
    is_next_step,
    is_question,
    sentences,
    shorten,
)

__all__ = [
    "ANSWER_OPENERS", "BULLET_CHARS", "CONTEXT_ENTITY_TYPES", "DIRECTIVE_LABELS",
    "answered_questions", "decisions_of", "extractive_summary", "references_of", "split_reason",
]  # fmt: skip

BULLET_CHARS = 200
"""Longest bullet the offline summarizer writes."""

DIRECTIVE_LABELS = {
    "Preference": "Preference",
    "Procedure": "Procedure",
    "Terminology": "Terminology",
    "LessonLearned": "Lesson learned",
}

CONTEXT_ENTITY_TYPES = ("File", "Tool", "Service", "Symbol", "Task", "Problem", "Incident")


def _dedup(items: Sequence[str]) -> list[str]:
    seen: dict[str, str] = {}
    for item in items:
        seen.setdefault(item.casefold(), item)
    return list(seen.values())


_REASON = re.compile(r",?\s+(?:because|since|so that|as it|given that)\s+", re.IGNORECASE)


def split_reason(decision: str) -> tuple[str, str | None]:
    """ "Use RQ for the queue because it is simple" -> ("Use RQ for the queue",
    "it is simple"): the decision and its stated reason, if any."""
    parts = _REASON.split(decision, maxsplit=1)
    if len(parts) == 2 and len(parts[0]) >= 3 and len(parts[1]) >= 3:
        return parts[0].strip(" ,;"), parts[1].strip(" .;")
    return decision, None


def decisions_of(
    turns: Sequence[SessionTurn], *, directives: bool = True
) -> list[tuple[str, SessionTurn]]:
    """Decisions (and, unless ``directives`` is off, memory directives: preference,
    procedure …) stated in the turns, in order, with the stating turn."""
    found: list[tuple[str, SessionTurn]] = []
    seen: set[str] = set()
    for turn in turns:
        for mention in turn.mentions:
            if mention.type == "Decision":
                text = mention.summary or mention.name
            elif directives and mention.type in DIRECTIVE_LABELS:
                text = f"{DIRECTIVE_LABELS[mention.type]}: {mention.summary or mention.name}"
            else:
                continue
            text = shorten(text[:1].upper() + text[1:], BULLET_CHARS)
            if text.casefold() not in seen:
                seen.add(text.casefold())
                found.append((text, turn))
    return found


def references_of(turns: Sequence[SessionTurn]) -> SummaryReferences:
    files: list[str] = []
    plans: list[str] = []
    branches: list[str] = []
    issues: list[str] = []
    for turn in turns:
        for mention in turn.mentions:
            target = {
                "File": files,
                "Plan": plans,
                "Branch": branches,
                "Issue": issues,
                "PullRequest": issues,
            }.get(mention.type)
            if target is not None:
                target.append(mention.name)
        if turn.git_branch:
            branches.append(turn.git_branch)
    return SummaryReferences(
        files=tuple(_dedup(files))[:30],
        plans=tuple(_dedup(plans))[:10],
        branches=tuple(_dedup(branches))[:10],
        issues=tuple(_dedup(issues))[:20],
    )


def _prose_turns(turns: Sequence[SessionTurn]) -> list[SessionTurn]:
    return [t for t in turns if t.role in ("user", "assistant")]


def _context(turns: Sequence[SessionTurn]) -> list[str]:
    prose = _prose_turns(turns) or list(turns)
    bullets: list[str] = []
    asks = [s for t in prose if t.role == "user" for s in sentences(t.content)]
    if asks:
        bullets.append(shorten(asks[0], BULLET_CHARS))
    elif prose:
        first = sentences(prose[0].content)
        if first:
            bullets.append(shorten(first[0], BULLET_CHARS))
    counts: Counter[str] = Counter()
    for turn in turns:
        for mention in turn.mentions:
            if mention.type in CONTEXT_ENTITY_TYPES:
                counts[mention.name] += 1
    if counts:
        names = [name for name, _ in counts.most_common(6)]
        bullets.append(shorten("Worked with " + ", ".join(names), BULLET_CHARS))
    span = f"turns {turns[0].turn_index}-{turns[-1].turn_index}" if turns else "no turns"
    tools = sum(1 for t in turns if t.role == "tool")
    tail = f", {tools} tool results" if tools else ""
    bullets.append(f"Segment of {len(turns)} turns ({span}{tail})")
    return bullets[:3]


def _picked(
    turns: Sequence[SessionTurn],
    keep: int,
    want: Callable[[str], bool],
    near: set[int],
    exclude: set[str],
) -> list[str]:
    """Sentences passing ``want``, scored: near a decision turn, then later turns first."""
    scored: list[tuple[float, int, str]] = []
    prose = _prose_turns(turns)
    for position, turn in enumerate(prose):
        for order, sentence in enumerate(sentences(turn.content)):
            if not want(sentence) or sentence.casefold() in exclude:
                continue
            score = (2.0 if turn.turn_index in near else 0.0) + position / max(1, len(prose))
            scored.append((score, -(position * 1000 + order), sentence))
    best = sorted(scored, reverse=True)[:keep]
    chosen = sorted(best, key=lambda item: -item[1])  # back in conversation order
    return _dedup([shorten(sentence, BULLET_CHARS) for _, _, sentence in chosen])


ANSWER_OPENERS = frozenset(
    """
    yes yeah yep yup no nope nah sure ok okay right correct exactly definitely probably
    maybe we it it's its i i'd i'll let's lets use go both neither either none all only
    just that this those the because since not
    """.split()  # noqa: SIM905
)
"""First words of a statement that answers the question right before it."""


def _replies(question_words: set[str], reply: Sequence[tuple[str, bool, set[str]]]) -> bool:
    statements = [(s, words) for s, q, words in reply if not q]
    if not statements:
        return False
    first = statements[0][0].split(maxsplit=1)[0].strip(",.:;!").lower() if statements else ""
    return first in ANSWER_OPENERS or any(question_words & words for _, words in statements)


def answered_questions(turns: Sequence[SessionTurn]) -> set[str]:
    """Questions of the span that a later turn of it answered (casefolded): the next turn
    of the other side replied with a statement, or a later statement takes up at least half
    of the question's words. Only the rest may be listed as open."""
    # a reply: the other side's next turn opens like an answer or takes up its words
    prose = _prose_turns(turns)
    said = [[(s, is_question(s), content_words(s)) for s in sentences(t.content)] for t in prose]
    answered: set[str] = set()
    for position, turn in enumerate(prose):
        for sentence, question, words in said[position]:
            if not question:
                continue
            reply = next(
                (n for n in range(position + 1, len(prose)) if prose[n].role != turn.role), None
            )
            if reply is not None and _replies(words, said[reply]):
                answered.add(sentence.casefold())
                continue
            needed = max(1, (len(words) + 1) // 2)
            if any(
                not q and len(words & later) >= needed
                for statements in said[position + 1 :]
                for _, q, later in statements
            ):
                answered.add(sentence.casefold())
    return answered


def extractive_summary(turns: Sequence[SessionTurn], title: str) -> SummaryContent:
    """The seed schema's sections for ``turns`` (at least one), without an LLM."""
    if not turns:
        raise ValueError("nothing to summarize")
    # a preference or a procedure is no decision: they are memories of their own
    decided = decisions_of(turns, directives=False)[-5:]
    decision_turns = {turn.turn_index for _, turn in decided}
    near = {i + 1 for i in decision_turns} | {i - 1 for i in decision_turns}
    decisions: list[str] = []
    reasons: list[str] = []
    for text, _ in decided:
        decision, reason = split_reason(text)
        decisions.append(decision)
        if reason:
            reasons.append(shorten(f"{decision}: because {reason}", BULLET_CHARS))
    used = {d.casefold() for d in decisions}
    stated = [s for t in turns if t.turn_index in decision_turns for s in sentences(t.content)]
    used |= {s.casefold() for s in stated}  # the decision sentences are covered above
    rationale = reasons[-3:]
    if len(rationale) < 3:
        rationale += _picked(
            turns, 3 - len(rationale), lambda s: has_cue(s, RATIONALE_CUES), near, used
        )
    used |= {r.casefold() for r in rationale}
    answered = answered_questions(turns)
    questions = _picked(
        turns,
        5,
        lambda s: (is_question(s) and not is_check_in(s)) or has_cue(s, OPEN_CUES),
        set(),
        used | answered,
    )
    used |= {q.casefold() for q in questions}
    steps = _picked(turns, 5, is_next_step, set(), used)
    return SummaryContent(
        topic=shorten(title, 120),
        context=tuple(shorten(c, MAX_ITEM_CHARS) for c in _context(turns)),
        decisions=tuple(decisions),
        rationale=tuple(rationale),
        open_questions=tuple(questions),
        next_steps=tuple(steps),
    )
