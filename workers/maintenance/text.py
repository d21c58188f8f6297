"""Sentences and cues: the small text tools the offline summarizers share."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable

__all__ = [
    "OPEN_CUES", "RATIONALE_CUES", "clean", "content_words", "first_words", "has_cue",
    "is_check_in", "is_next_step", "is_question", "sentences", "shorten", "words",
]  # fmt: skip

_CODE_BLOCK = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[A-Z0-9])|\n+")
_SPACES = re.compile(r"\s+")
_BULLET = re.compile(r"^\s*(?:[-*>•]|\d+[.)])\s+")

RATIONALE_CUES = (
    "because", "since ", "so that", "due to", "the reason", "reason is", "trade-off", "tradeoff",
    "to avoid", "otherwise", "which means", "as it ", "given that",
)  # fmt: skip
"""Phrases that introduce a why."""

_STEP_MARKER = re.compile(
    r"(?<![a-z0-9])(?:next\s+steps?\b|next\s*[:,]|next\s+(?:i|we|let's|lets)\b|to\s*do\s*:"
    r"|todo\b|follow[ -]up\b|action\s+items?\b)"
)
"""Words that label what follows as work still to do ("Next steps:", "TODO", "follow up")."""

_COMMITMENT = re.compile(
    r"(?<![a-z0-9'])(?:"
    r"(?:i|we)(?:'ll|\s+will|\s+shall|\s+should|'d\s+better|(?:'m|'re|\s+am|\s+are)\s+going\s+to)"
    r"|(?:i|we|you)\s+(?:still\s+)?(?:need|have|got)\s+to"
    r"|let(?:'s|\s+us)\s+|let\s+me\s+(?!know\b)"
    r"|then\s+(?:we|i)\b"
    r")"
)
"""A speaker taking on work: "I'll …", "we need to …", "let's …", "then we …". Said of
anything else ("the API needs to …", "it will …", "users must …") it is a requirement or
a fact, not a step: the subject decides, whatever the verb."""


def is_next_step(sentence: str) -> bool:
    """Whether ``sentence`` announces work still to be done: labelled so ("Next steps:",
    "TODO"), or a speaker committing to it ("I'll add …", "we still need to …")."""
    if is_question(sentence):
        return False
    lowered = sentence.lower().replace("\u2019", "'")
    return bool(_STEP_MARKER.search(lowered) or _COMMITMENT.search(lowered))


OPEN_CUES = (
    "open question", "not sure", "unclear", "undecided", "tbd", "still need to decide",
    "haven't decided", "have not decided", "unresolved", "risk", "don't know", "do not know",
)  # fmt: skip
"""Phrases that mark something unresolved (besides a question mark)."""


def clean(text: str) -> str:
    """Code blocks out, whitespace folded."""
    return _SPACES.sub(" ", _CODE_BLOCK.sub(" ", text)).strip()


def sentences(text: str, max_chars: int = 240) -> list[str]:
    """Prose sentences of ``text`` (code blocks left out), each at most ``max_chars``."""
    out: list[str] = []
    for piece in _SENTENCE_END.split(_CODE_BLOCK.sub("\n", text)):
        sentence = _SPACES.sub(" ", _BULLET.sub("", piece)).strip()
        if len(sentence) < 8 or not any(ch.isalpha() for ch in sentence):
            continue
        out.append(shorten(sentence, max_chars))
    return out


def shorten(text: str, max_chars: int) -> str:
    """At most ``max_chars``, cut at a word boundary with an ellipsis."""
    text = text.strip()
    if len(text) <= max_chars:
        return text
    cut = text[: max_chars - 1].rsplit(" ", 1)[0].rstrip(" ,;:")
    return cut + "…"


def has_cue(sentence: str, cues: Iterable[str]) -> bool:
    """A cue said as words: it starts a word ("risk" is no cue in "brisk walking", which
    RealMem summaries listed as open)."""
    lowered = f" {sentence.lower()} "
    return any(_cue_pattern(cue).search(lowered) for cue in cues)


@functools.cache
def _cue_pattern(cue: str) -> re.Pattern[str]:
    return re.compile(r"(?<![a-z0-9])" + re.escape(cue))


_WORD = re.compile(r"[a-z0-9][a-z0-9'_-]+")
_FUNCTION_WORDS = frozenset(
    """
    the and for are was were will would should could can did does doing done has have had
    not but you your our this that these those with what which who whom whose when where why
    how there their them they then than its it's into onto from about just also any all
    some more most much many very too use used using get got let lets we'd we'll i'll i'm
    i've you'd you're we're don't doesn't didn't isn't aren't wasn't yes okay sure
    """.split()  # noqa: SIM905
)


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its subject (lowercase, function words out)."""
    return {w for w in _WORD.findall(text.lower()) if w not in _FUNCTION_WORDS}


def is_question(sentence: str) -> bool:
    return sentence.rstrip().endswith("?")


_CHECK_IN = re.compile(
    r"^\W*(?:(?:so|and|ok|okay|well|now)\W+)?(?:"
    r"how\s+(?:does|do|did|is|are|would)\b.*\b(?:sound|look|looks|feel|feels|seem|resonate)"
    r"|what\s+do\s+you\s+think|what\s+are\s+your\s+thoughts|any\s+(?:other\s+)?(?:thoughts|questions)"
    r"|(?:does|do|would)\s+(?:that|this|these|it|those)\s+(?:sound|look|work|seem|help)"
    r"|is\s+there\s+anything\s+else|anything\s+else"
    r"|would\s+you\s+like|do\s+you\s+want\s+me\s+to|shall\s+(?:we|i)|should\s+i\s+(?:go\s+on|continue)"
    r"|are\s+you\s+ready|ready\s+to\b|how\s+about\s+(?:that|this|it)\b)",
    re.IGNORECASE,
)


def is_check_in(sentence: str) -> bool:
    """A question that asks the other side how they feel about what was just said ("How
    does this plan sound to you?", "Anything else?", "Shall we start with …?"): it keeps the
    conversation going and is no open question of the work (issue 20: 23 of the 134 open
    questions of the RealMem dev summaries were such check-ins)."""
    return is_question(sentence) and bool(_CHECK_IN.search(sentence))


def first_words(text: str, count: int) -> str:
    words = clean(text).split()
    return " ".join(words[:count]) + (" …" if len(words) > count else "")


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", text.lower()))
