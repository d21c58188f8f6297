"""The tools and services the offline extractor recognises by name.

The list is ``vocabulary.txt`` (one product per line, its canonical name first; a name
that is also an ordinary English word, such as ``make`` or ``black``, is marked and only
counts inside a code span). The matcher is compiled from it once, on first use.
"""

from __future__ import annotations

import re
from functools import lru_cache
from pathlib import Path

from turngraph.workers.extraction.references import ascii_lower

__all__ = ["VOCABULARY_FILE", "Entry", "find_terms", "is_term", "lookup", "read_vocabulary"]

VOCABULARY_FILE = Path(__file__).with_name("vocabulary.txt")
"""``[Tool]`` / ``[Service]`` sections, ``canonical|spelling|…`` lines, a trailing ``*``
marking a spelling that is an English word too."""


def read_vocabulary(
    path: Path = VOCABULARY_FILE,
) -> list[tuple[str, str, tuple[str, ...], frozenset[str]]]:
    """``(type, canonical, other spellings, code-only spellings)`` per line of ``path``."""
    entries = []
    type_name = "Tool"
    for raw in path.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            type_name = line[1:-1]
            continue
        spellings = [s.strip() for s in line.split("|") if s.strip()]
        code_only = frozenset(s.rstrip("*") for s in spellings if s.endswith("*"))
        names = [s.rstrip("*") for s in spellings]
        entries.append((type_name, names[0], tuple(names[1:]), code_only))
    return entries


_WORD = re.compile(r"[a-z0-9][\w.+-]*[\w+]|[a-z]")
"""Words of the ASCII-lowered text, dots and dashes kept ("node.js", "redis-py")."""

Entry = tuple[str, str, bool]
"""(canonical name, ontology type, code only)."""


@lru_cache(maxsize=1)
def _index() -> tuple[dict[str, Entry], frozenset[str], dict[str, tuple[str, ...]]]:
    """Spellings (exact and casefolded; the first entry wins on case: "openai" is the
    Python package, a Tool, "OpenAI" the platform, a Service), the lowered one-word
    spellings, and the lowered phrases by their first word."""
    spellings: dict[str, Entry] = {}
    exact: dict[str, Entry] = {}
    for type_name, canonical, others, code_words in read_vocabulary():
        for spelling in (canonical, *others):
            folded = spelling.casefold()
            if spelling in exact or (folded in spellings and spelling == folded):
                continue  # an earlier line wins ("Redis" stays the Service it is first)
            code_only = spelling in code_words
            # A code-only word written capitalised names the product in prose too.
            exact[spelling] = (canonical, type_name, code_only and not spelling[:1].isupper())
            spellings.setdefault(folded, (canonical, type_name, code_only))
    spellings.update(exact)
    lowered = {s.lower() for s in spellings}
    words = frozenset(s for s in lowered if " " not in s)
    phrases: dict[str, list[str]] = {}
    for phrase in sorted(s for s in lowered if " " in s):
        phrases.setdefault(phrase.split()[0], []).append(phrase)
    return spellings, words, {head: tuple(p) for head, p in phrases.items()}


@lru_cache(maxsize=512)
def _pattern(spelling: str) -> re.Pattern[str]:
    body = r"\s+".join(re.escape(word) for word in spelling.split())
    return re.compile(body + r"(?![\w/]|-\d|:\w|\.\w)")


def _lookup(spellings: dict[str, Entry], written: str) -> Entry | None:
    return spellings.get(written) or spellings.get(written.casefold())


def find_terms(text: str) -> list[tuple[int, int, str, str, bool]]:
    """``(start, end, canonical name, type, code_only)`` for each tool or service named.

    The text's distinct words are intersected with the spellings first (a set operation);
    only the few spellings present are then searched for, each with a literal-led regex.
    A word like ``redis-server`` or ``JPype-hosted`` counts for its known first part."""
    spellings, one_word, phrases = _index()
    lower = ascii_lower(text)
    words = set(_WORD.findall(lower))
    candidates = words & one_word
    for word in words - one_word:
        if "-" in word:
            head = word.split("-", 1)[0]
            if head in one_word:
                candidates.add(head)
    for head in words & phrases.keys():
        candidates.update(phrases[head])
    if not candidates:
        return []
    spans: list[tuple[int, int]] = []
    for spelling in candidates:
        for match in _pattern(spelling).finditer(lower):
            start = match.start()
            if start == 0 or not (lower[start - 1].isalnum() or lower[start - 1] in "_./@-"):
                spans.append(match.span())
    spans.sort(key=lambda span: (span[0], span[0] - span[1]))  # longest first at a start
    found: list[tuple[int, int, str, str, bool]] = []
    taken_until = -1
    for start, end in spans:
        if start < taken_until:
            continue
        written = " ".join(text[start:end].split())
        entry = _lookup(spellings, written)
        if entry is None:
            continue
        if not entry[2] and written.casefold() in _code_words() and _opens_sentence(text, start):
            entry = (entry[0], entry[1], True)  # "Go ahead", "Express it": code only
        found.append((start, end, *entry))
        taken_until = end
    return found


@lru_cache(maxsize=1)
def _code_words() -> frozenset[str]:
    """Casefolded spellings that are English words too."""
    spellings = _index()[0]
    return frozenset(k for k, v in spellings.items() if k == k.casefold() and v[2])


def _opens_sentence(text: str, start: int) -> bool:
    before = text[:start].rstrip(" \t\"'(*_>-")
    return not before or before[-1] in ".!?:\n"


def lookup(name: str) -> tuple[str, str] | None:
    """``(canonical name, type)`` when ``name`` is a listed spelling."""
    entry = _lookup(_index()[0], name)
    return (entry[0], entry[1]) if entry else None


def is_term(text: str) -> bool:
    """True when ``text`` is exactly a tool or service spelling (not a code symbol)."""
    return _lookup(_index()[0], text) is not None
