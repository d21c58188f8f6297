"""Text analysis shared by the index and the query side: tokens, stems, entity keys.

The same functions run at index time and at query time, so a term matches exactly when
both sides analyse it the same way. Everything here is pure and cheap (no I/O, no state).

Words of any script count: a word with letters outside ASCII is folded (accents
dropped, case folded: "Größe" and "grosse" meet), and Chinese, Japanese and Korean
text, written without spaces between words, is indexed as overlapping character pairs
(the bigrams of Lucene's CJK analyser). ASCII words take the fast path they always took.
"""

from __future__ import annotations

import math
import re
import unicodedata
from functools import lru_cache

__all__ = [
    "MAX_ENTITY_NGRAM", "STOPWORDS", "WORD_CACHE", "entity_key", "entity_ngrams",
    "estimate_tokens", "fold", "stem", "tokenize", "truncate_to_tokens", "unaccented", "words",
]  # fmt: skip

_MARKS = (
    "\u0300-\u036f\u0900-\u0963\u0966-\u0dff\u0e00-\u0e4e\u0e50-\u0e59\u0e80-\u0eff"
    "\u0f00-\u0f03\u0f15-\u0fd4\u1000-\u1049\u1050-\u109f\u1780-\u17d3\u17e0-\u17e9"
)
"""Combining diacritics and the blocks of the Indic, Thai, Lao, Tibetan, Myanmar and Khmer
scripts less their punctuation: their vowel signs and viramas are marks, which ``\\w``
leaves out, so "नमस्ते" would fall apart at them."""
_LETTER = rf"(?:[^\W_]|[{_MARKS}])"
_WORD = re.compile(rf"{_LETTER}(?:(?:[\w.\-/]|[{_MARKS}])*{_LETTER})?")
"""A word of any script: letters, digits and marks, with ``_ . - /`` inside (identifiers).
On ASCII text the same matches as ``[A-Za-z0-9][A-Za-z0-9_.\\-/]*[A-Za-z0-9]``."""
_ALNUM = re.compile(r"[a-z0-9]+")
_CAMEL = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
_SEPARATORS = re.compile(r"[_.\-/]+")

_CJK_CHARS = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af"
"""Hiragana, Katakana, CJK ideographs (with extension A and the compatibility block) and
Hangul syllables: scripts whose words are not (or not reliably) set apart by spaces."""
_RUNS = re.compile(rf"([{_CJK_CHARS}]+)|((?:(?![{_CJK_CHARS}]){_LETTER})+)")
"""A word's runs: group 1 CJK characters, group 2 letters and digits of other scripts."""
_UNICODE_WORDS = re.compile(rf"[{_CJK_CHARS}]|(?:(?![{_CJK_CHARS}]){_LETTER})+")
"""Words for entity keys and word sets: each CJK character one word."""

_STOPWORD_TEXT = """
a about above after again against all also am an and any are aren as at be because been
before being below between both but by can cannot could couldn did didn do does doesn
doing don down during each either else ever every few for from further get got had hadn
has hasn have haven having he her here hers herself him himself his how i if in into is
isn it its itself just let lets like ll me more most much must my myself no nor not now
of off on once one only or other ought our ours ourselves out over own per please pls re
really s same say said shall she should shouldn so some still such sure t than thank
thanks that the their theirs them themselves then there these they this those though
through to too under until up upon us use used using ve very via want was wasn way we
well were weren what whats when where whether which while who whom why will with won
would wouldn yeah yes yet you your yours yourself yourselves ok okay hey hi hmm actually
maybe kind sort thing things stuff something anything know remember recall tell think
thought mean meant again back go going gonna
"""

STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""English function words and chat filler; they carry no retrieval signal."""

WORD_CACHE = 131_072
"""Distinct raw words whose terms :func:`tokenize` keeps (a few MB at most)."""

MAX_ENTITY_NGRAM = 5
"""Longest entity name, in word pieces, that a query n-gram lookup can match."""


@lru_cache(maxsize=65_536)
def stem(word: str) -> str:
    """A light, deterministic suffix stripper (plural, -ing, -ed, -ly, -ation).

    Not Porter: it only folds the inflections that split developer vocabulary most
    often (retries/retried/retrying -> retry), and never touches short words.
    """
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    if word.endswith("ied") and len(word) > 4:
        return word[:-3] + "y"
    for suffix in ("ing", "ed"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            base = word[: -len(suffix)]
            if len(base) >= 4 and base[-1] == base[-2] and base[-1] not in "lsz":
                base = base[:-1]  # running -> run, stopped -> stop
            return base[:-1] if base.endswith("e") and len(base) >= 4 else base
    if word.endswith("ation") and len(word) > 7:
        return word[:-5] + "ate"
    if word.endswith("ly") and len(word) > 5:
        return word[:-2]
    if word.endswith("e") and len(word) >= 4:
        return word[:-1]  # replace/replaces/replaced/replacing all meet at "replac"
    return word


def _pieces(raw: str) -> list[str]:
    """Split an identifier into lowercase parts: ``RetryPolicy.max_attempts`` -> 4 parts."""
    parts: list[str] = []
    for chunk in _SEPARATORS.split(raw):
        if chunk:
            parts.extend(p.lower() for p in _CAMEL.findall(chunk))
    return parts


_KANA_VOICING = frozenset("\u3099\u309a")
"""Kana's voicing marks: combining marks that make another syllable (ヘ, ベ, ペ), kept."""


def unaccented(text: str) -> str:
    """``text`` in compatibility form without accents: "Crème" -> "Creme", full-width
    Latin letters as ASCII ones; kana keep their voicing and Hangul stays in syllables."""
    decomposed = unicodedata.normalize("NFKD", text)
    kept = "".join(c for c in decomposed if c in _KANA_VOICING or not unicodedata.combining(c))
    return kept if kept.isascii() else unicodedata.normalize("NFC", kept)


def fold(text: str) -> str:
    """``text`` without accents and case-folded: "Crème Brûlée" -> "creme brulee"."""
    if text.isascii():
        return text.lower()
    return unaccented(text).casefold()


def words(text: str) -> list[str]:
    """The folded words of ``text`` (each CJK character one word): what entity keys and
    word-set comparisons are made of. ASCII text: its lowercase letter-digit runs."""
    if text.isascii():
        return _ALNUM.findall(text.lower())
    return _UNICODE_WORDS.findall(fold(text))


def tokenize(text: str) -> list[str]:
    """Index/query terms: stemmed words without stopwords, plus whole identifiers.

    ``payment_service.py`` yields ``payment``, ``service``, ``py`` and the compound
    ``payment_service.py``, so an exact identifier outranks a loose mention of its parts.
    """
    terms: list[str] = []
    for raw in _WORD.findall(text):
        terms.extend(_word_terms(raw))
    return terms


@lru_cache(maxsize=WORD_CACHE)
def _word_terms(raw: str) -> tuple[str, ...]:
    """The terms of one word as :func:`tokenize` finds it (cached: chat vocabulary is
    Zipfian, so a replica's bootstrap analyses each frequent word once)."""
    if not raw.isascii():
        return _unicode_terms(raw)
    pieces = _pieces(raw)
    terms = [raw.lower()] if len(pieces) > 1 else []
    for piece in pieces:
        if piece not in STOPWORDS and (len(piece) > 1 or piece.isdigit()):
            terms.append(stem(piece))
    return tuple(terms)


def _unicode_terms(raw: str) -> tuple[str, ...]:
    """A word with letters outside ASCII: accents dropped first (a word that is then
    ASCII, "café", takes the ASCII path); CJK runs as overlapping character pairs (one
    character alone as itself); other scripts' runs case-folded, stemmed, stopwords out."""
    unmarked = unaccented(raw)
    if unmarked.isascii():
        return _word_terms(unmarked) if _WORD.fullmatch(unmarked) else ()
    terms: list[str] = []
    pieces = [p for p in _SEPARATORS.split(unmarked) if p]
    if len(pieces) > 1:
        terms.append(unmarked.casefold())  # the whole identifier, as for ASCII ones
    for piece in pieces:
        for cjk, other in _RUNS.findall(piece):
            if cjk:
                pairs = [cjk[i : i + 2] for i in range(len(cjk) - 1)]
                terms.extend(pairs or [cjk])
            elif other.isascii():
                terms.extend(_word_terms(other))
            else:
                word = other.casefold()
                if word not in STOPWORDS and len(word) > 1:
                    terms.append(stem(word))
    return tuple(terms)


def entity_key(name: str) -> str:
    """The normalised form of an entity name: its folded words (:func:`words`), one space."""
    return " ".join(words(name))


def entity_ngrams(text: str, max_len: int = MAX_ENTITY_NGRAM) -> list[str]:
    """Every 1..max_len word n-gram of ``text`` in :func:`entity_key` form, once each, in
    the order they first occur (an order that does not depend on the process's string
    hashing, so every replica ranks alike)."""
    found = words(text)
    grams: dict[str, None] = {}
    for start in range(len(found)):
        for length in range(1, max_len + 1):
            if start + length > len(found):
                break
            grams[" ".join(found[start : start + length])] = None
    return list(grams)


def estimate_tokens(text: str) -> int:
    """Rough LLM token count: about 4 characters or 0.75 words per token, whichever is more."""
    return max(1, math.ceil(len(text) / 4), math.ceil(len(text.split()) * 4 / 3))


def truncate_to_tokens(text: str, budget_tokens: int) -> str:
    """Cut at a word boundary so that ``estimate_tokens`` stays within the budget."""
    max_words = max(1, budget_tokens * 3 // 4 - 1)
    max_chars = max(1, budget_tokens * 4 - 8)
    kept: list[str] = []
    used = 0
    for word in text.split()[:max_words]:
        if used + len(word) + 1 > max_chars:
            break
        kept.append(word)
        used += len(word) + 1
    return " ".join(kept) + " …"
