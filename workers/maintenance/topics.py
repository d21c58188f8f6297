"""What a segment of conversation is about: its ``topic_id`` (what compaction groups by),
a readable title, and its plan id.

Computed from what extraction put in the graph, never asked of an LLM, so the same topic
gets the same id in every summary: the subject of the latest decision, else the plan, else
the thing most turns mention (at least two), else the words most turns keep saying, else
the session's opening words. A new id that names an
existing topic with extra words ("job queue instead" vs "job queue") reuses the existing.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.maintenance.text import content_words, first_words

__all__ = [
    "CONTRACTION_TAILS", "MAX_TOPIC_ID_CHARS", "MAX_TOPIC_WORDS", "MIN_TOPIC_TURNS",
    "MIN_TOPIC_WORD_CHARS", "TOPIC_CUT_WORDS", "TOPIC_ENTITY_TYPES", "TOPIC_FILLER_WORDS",
    "TOPIC_STOPWORDS", "TOPIC_WORDS", "Topic", "match_existing", "plan_of", "recurring_words",
    "slug", "subject_words", "topic_of",
]  # fmt: skip

TOPIC_ENTITY_TYPES = (
    "Task", "Problem", "Incident", "Concept", "Service", "Tool", "File", "Symbol", "Topic",
)  # fmt: skip
"""Entity types that can name a topic when no decision or plan does, best first."""

MAX_TOPIC_ID_CHARS = 80

_SLUG = re.compile(r"[^a-z0-9]+")

TOPIC_CUT_WORDS = frozenset(
    {
        "because", "since", "after", "instead", "so", "as", "which", "that", "but", "and",
        "to", "with", "when", "if", "unless", "than", "rather", "from", "until", "while",
        "for", "over", "versus", "vs", "or", "not",
    }
)  # fmt: skip
"""A decision subject is cut at the first of these: "job queue because it is simple",
"job queue after all" and "job queue instead" are all the topic "job queue"."""

TOPIC_STOPWORDS = frozenset(
    {
        "the", "a", "an", "our", "its", "their", "this", "that", "these", "those", "we", "us",
        "you", "your", "i", "me", "my", "it", "they", "them",
    }
)  # fmt: skip
"""Words that never name a topic (a decision "you should go with …" made the RealMem topic
"You")."""

TOPIC_FILLER_WORDS = frozenset(
    {
        "always", "never", "often", "usually", "sometimes", "ever", "just", "also", "only",
        "still", "really", "definitely", "probably", "maybe", "perhaps", "please", "now",
        "will", "would", "should", "shall", "must", "can", "could", "may", "might", "let",
        "lets", "do", "does", "did", "be", "is", "are", "was", "were",
    }
)  # fmt: skip
"""Modal verbs and adverbs of frequency or degree: they qualify a decision, never name its
subject (a subject "always …" titled a summary "Always")."""

CONTRACTION_TAILS = frozenset({"ll", "re", "ve", "d", "m", "s", "t"})
"""What is left of a contraction once its apostrophe is gone ("we'll" -> "we ll"): a
summary was titled "Ll" from "we'll go with …"."""

MIN_TOPIC_WORD_CHARS = 3
"""A subject names a topic only when one of its words is at least this long."""

_STAGE = re.compile(r"^(?:phase|stage|step|milestone|part)\s+[0-9ivx.]+$", re.IGNORECASE)
"""A plan named only by a stage number ("Phase 1") is a stage of some plan, spelled the
same in every plan: it is a reference, never a topic (RealMem grouped the summaries of 10
and 11 unrelated sessions of one workspace under "Phase 1")."""

MAX_TOPIC_WORDS = 4

MIN_TOPIC_TURNS = 2
"""A thing names a segment's topic only when at least this many of its turns mention it
(a tool named once in a preferences chat is a keyword accident, not the topic)."""

TOPIC_WORDS = 3
"""Words of a topic taken from what the turns keep saying, when no decision, plan or
recurring thing names it."""


def recurring_words(turns: Sequence[SessionTurn]) -> list[str]:
    """Up to :data:`TOPIC_WORDS` content words that most of the prose turns share (each in
    at least :data:`MIN_TOPIC_TURNS` turns), in the order the conversation first says
    them."""
    prose = [t for t in turns if t.role in ("user", "assistant")]
    seen: Counter[str] = Counter()
    first: dict[str, int] = {}
    for position, turn in enumerate(prose):
        for word in content_words(turn.content):
            if len(word) > 2 and not word.isdigit():
                seen[word] += 1
                first.setdefault(word, position)
    best = sorted(
        (w for w, n in seen.items() if n >= MIN_TOPIC_TURNS), key=lambda w: (-seen[w], first[w], w)
    )[:TOPIC_WORDS]
    return sorted(best, key=lambda w: (first[w], w))


@dataclass(frozen=True)
class Topic:
    topic_id: str
    title: str
    plan_id: str | None


def slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")[:MAX_TOPIC_ID_CHARS].strip("-")


def _title(text: str) -> str:
    text = text.strip()
    return text[:1].upper() + text[1:] if text else text


def subject_words(subject: str) -> str:
    """The head of a decision subject: up to the first cut word, at most four words;
    pronouns, modal verbs, adverbs and contractions left out. Empty when nothing is left
    that could name a topic."""
    kept: list[str] = []
    lowered = subject.lower().replace("\u2019", "'")
    for word in re.findall(r"[a-z0-9][a-z0-9'._/#+-]*", lowered):
        stem, apostrophe, tail = word.partition("'")
        if apostrophe and tail not in ("s", ""):
            continue  # a contraction: "we'll", "don't"
        word = stem
        if word in TOPIC_CUT_WORDS and kept:
            break
        if (
            word in TOPIC_STOPWORDS
            or word in TOPIC_CUT_WORDS
            or word in TOPIC_FILLER_WORDS
            or word in CONTRACTION_TAILS
        ):
            continue
        kept.append(word)
        if len(kept) == MAX_TOPIC_WORDS:
            break
    if not any(len(word) >= MIN_TOPIC_WORD_CHARS for word in kept):
        return ""
    return " ".join(kept)


def plan_of(turns: Sequence[SessionTurn]) -> str | None:
    """The latest plan the turns name, other than a bare stage number ("Phase 1")."""
    for turn in reversed(turns):
        for mention in turn.mentioned("Plan"):
            if not _STAGE.match(mention.name.strip()):
                return mention.name
    return None


def topic_of(turns: Sequence[SessionTurn], existing: Iterable[str] = ()) -> Topic:
    """The topic of a segment, reusing an ``existing`` topic id when one matches."""
    plan = plan_of(turns)
    subject = None
    for turn in reversed(turns):
        subjects = [m.subject for m in turn.mentioned("Decision") if m.subject]
        if subjects:
            subject = subjects[-1]
            break
    subject = subject_words(subject) if subject else None
    if subject:
        candidate, title = slug(subject), _title(subject)
    elif plan and slug(plan):
        candidate, title = slug(plan), plan
    else:
        counts: Counter[tuple[int, str]] = Counter()
        for turn in turns:
            # distinct turns: one turn naming a thing five times is still one mention
            for kind, name in {(m.type, m.name) for m in turn.mentions}:
                if kind in TOPIC_ENTITY_TYPES:
                    counts[(TOPIC_ENTITY_TYPES.index(kind), name)] += 1
        counts = Counter({key: n for key, n in counts.items() if n >= MIN_TOPIC_TURNS})
        words = recurring_words(turns)
        if counts:
            (_, name), _ = min(counts.items(), key=lambda kv: (-kv[1], kv[0][0], kv[0][1]))
            candidate, title = slug(name), name
        elif words:
            candidate, title = slug(" ".join(words)), _title(" ".join(words))
        else:
            opening = next((t.content for t in turns if t.role == "user"), turns[0].content)
            title = first_words(opening, 8)
            candidate = slug(first_words(opening, 5)) or "conversation"
    topic_id = match_existing(candidate, existing) or candidate or "conversation"
    if plan and title != plan and not title.lower().startswith(plan.lower()):
        title = f"{plan}: {title}"
    return Topic(topic_id=topic_id, title=title[:120], plan_id=plan)


def match_existing(candidate: str, existing: Iterable[str]) -> str | None:
    """An existing id that is the candidate, or that contains / is contained in it word for
    word (the shorter side having at least two words, so "queue" never swallows topics)."""
    words = candidate.split("-")
    best: str | None = None
    for other in existing:
        if other == candidate:
            return other
        other_words = other.split("-")
        shorter, longer = sorted((words, other_words), key=len)
        fits = len(shorter) >= 2 and _contains(longer, shorter)
        if fits and (best is None or len(other) < len(best)):
            best = other
    return best


def _contains(longer: Sequence[str], shorter: Sequence[str]) -> bool:
    n = len(shorter)
    return any(list(longer[i : i + n]) == list(shorter) for i in range(len(longer) - n + 1))
