"""People named in a query: lift what they said, and keep their names out of the
query's vector.

A question about someone is most often answered by what that person said, yet their name
barely counts lexically (the index analyses ``speaker: text``). So a memory spoken by a
speaker the query names gets ``Ranking.speaker_multiplier``, and the query is embedded
without the searched partitions' speakers' names. A speaker is named when one word of
their name (two letters or more) appears in the query exactly as written ("Will", not
"will"), or capitalised when the name is written in lower case (a handle: "elise" is
named by "Elise").

A person, not a role: when the speaker field holds a role ("user", "assistant", as an
editor's turns carry), the word is no one's name. A person the query names weighs
``Ranking.person_multiplier`` instead, and their name is left out of the lexical query
too: their turns are found by the multiplier, while the name as a word matches the other
person's turns that address them ("Thanks, Kate!"). docs/recall.md ("Scoring", Speakers).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

from turngraph.workers.recall.text import unaccented

__all__ = [
    "ROLE_WORDS", "name_words", "person_words", "persons_of", "query_names", "speaker_multiplier",
    "without_names",
]  # fmt: skip

_WORDS = re.compile(r"\w+")


ROLE_WORDS = frozenset({"user", "assistant", "system", "tool"})
"""Speaker words that name a role, not a person (any case)."""

SPEAKER_CACHE = 4096
"""Speakers whose name words are kept (a search asks for each candidate's speaker)."""


@lru_cache(maxsize=SPEAKER_CACHE)
def name_words(speaker: str | None) -> tuple[str, ...]:
    """The words of a speaker's name that can name them in a query (two letters or more):
    each as written and, for a person's name written in lower case, capitalised."""
    found: list[str] = []
    for word in _WORDS.findall(speaker or ""):
        if len(word) > 1:
            found.extend(_spellings(word))
            if word.islower() and word not in ROLE_WORDS:
                found.extend(_spellings(word.capitalize()))
    return tuple(found)


def _spellings(word: str) -> tuple[str, ...]:
    """``word`` as written and, when it has accents, without them ("Zoë", "Zoe"): a name
    typed either way names the same person."""
    plain = word if word.isascii() else unaccented(word)
    return (word,) if plain == word else (word, plain)


@lru_cache(maxsize=SPEAKER_CACHE)
def person_words(speaker: str | None) -> tuple[str, ...]:
    """The :func:`name_words` that name a person (no role word)."""
    return tuple(word for word in name_words(speaker) if word.lower() not in ROLE_WORDS)


def persons_of(names: Collection[str]) -> frozenset[str]:
    """The ``names`` (speakers' name words found in a query) that name a person."""
    return frozenset(name for name in names if name.lower() not in ROLE_WORDS)


def query_names(query: str) -> frozenset[str]:
    """The words of a query as written (and without their accents), to match speakers'
    names against."""
    return frozenset(s for word in _WORDS.findall(query) for s in _spellings(word))


def speaker_multiplier(
    speaker: str | None, named: frozenset[str], multiplier: float, person: float | None = None
) -> float:
    """``person`` (``Ranking.person_multiplier``; ``multiplier`` when not given) when a
    word of the speaker's person name is in ``named``, ``multiplier``
    (``Ranking.speaker_multiplier``) when a role word of theirs is, else 1.0."""
    if not named:
        return 1.0
    if any(w in named for w in person_words(speaker)):
        return multiplier if person is None else person
    return multiplier if any(w in named for w in name_words(speaker)) else 1.0


def without_names(query: str, names: Collection[str]) -> str:
    """``query`` without the given name words (and a possessive "'s" after them); the
    query itself when nothing else would be left."""
    if not names:
        return query
    pattern = r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b(?:['\u2019]s\b)?"
    rest = " ".join(re.sub(pattern, " ", query).split())
    return rest if _WORDS.search(rest) else query
