"""People named in a query: lift what they said, and keep their names out of the
query's vector.

A question about someone is most often answered by what that person said, yet their name
barely counts lexically (the index analyses ``speaker: text``). So a memory spoken by a
person the query names gets ``Ranking.speaker_multiplier``, and the query is embedded
without the searched partitions' speakers' names. A speaker is named when one word of
their name (two letters or more) appears in the query exactly as written ("Will", not
"will"). docs/recall.md ("Scoring", Speakers).
"""

from __future__ import annotations

import re
from collections.abc import Collection
from functools import lru_cache

__all__ = ["name_words", "query_names", "speaker_multiplier", "without_names"]

_WORDS = re.compile(r"\w+")


SPEAKER_CACHE = 4096
"""Speakers whose name words are kept (a search asks for each candidate's speaker)."""


@lru_cache(maxsize=SPEAKER_CACHE)
def name_words(speaker: str | None) -> tuple[str, ...]:
    """The words of a speaker's name that can name them in a query (two letters or more)."""
    return tuple(word for word in _WORDS.findall(speaker or "") if len(word) > 1)


def query_names(query: str) -> frozenset[str]:
    """The words of a query as written, to match speakers' names against."""
    return frozenset(_WORDS.findall(query))


def speaker_multiplier(speaker: str | None, named: frozenset[str], multiplier: float) -> float:
    """``multiplier`` (``Ranking.speaker_multiplier``) when a word of the speaker's name
    is in ``named``, else 1.0."""
    if not named:
        return 1.0
    return multiplier if any(w in named for w in name_words(speaker)) else 1.0


def without_names(query: str, names: Collection[str]) -> str:
    """``query`` without the given name words (and a possessive "'s" after them); the
    query itself when nothing else would be left."""
    if not names:
        return query
    pattern = r"\b(?:" + "|".join(map(re.escape, sorted(names))) + r")\b(?:['\u2019]s\b)?"
    rest = " ".join(re.sub(pattern, " ", query).split())
    return rest if _WORDS.search(rest) else query
