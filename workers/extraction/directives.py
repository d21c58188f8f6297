"""Memory directives (``decision:``, ``preference (user):`` …) and explicit decisions
("we decided to …", "let's go with …"), with the normalised subject of a decision.

A decision's ``subject`` is what it decides about, normalised so that two decisions on
the same subject compare equal: the graph writer lets the newer one supersede the older.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from turngraph.workers.extraction.references import ascii_lower

__all__ = [
    "DIRECTIVE_KEYWORDS", "MAX_TEXT_CHARS", "Statement", "decision_subject", "find_decisions",
    "find_directives", "normalize_subject",
]  # fmt: skip

DIRECTIVE_KEYWORDS: dict[str, str] = {
    "decision": "Decision",
    "preference": "Preference",
    "terminology": "Terminology",
    "term": "Terminology",
    "lesson": "LessonLearned",
    "lesson learned": "LessonLearned",
    "lesson_learned": "LessonLearned",
    "lesson-learned": "LessonLearned",
    "procedure": "Procedure",
}
"""Directive keywords (case-insensitive) and the entity type each creates."""

MAX_TEXT_CHARS = 500

_DIRECTIVE = re.compile(
    r"(decision|preference|terminology|term|lesson[ _-]learned|lesson|procedure)"
    r"[ \t]*(?:\([ \t]*(workspace|user)[ \t]*\))?[ \t]*:[ \t]*(\S[^\n]*)"
)
"""Run on the ASCII-lowered text; where it may start is checked by :func:`_starts_line`."""
# Matched on the ASCII-lowered text, starting with a literal (fast to scan for); the
# word-boundary check before the match is done in Python.
_DECISION = re.compile(
    r"(?:"
    r"we(?:'ve|\s+have)?\s+(?:finally\s+|now\s+|just\s+|already\s+)?decided"
    r"|(?:we|i)\s+(?:have\s+)?(?:agreed|settled)(?=\s+(?:on|to|that)\b)"
    r"|let'?s\s+go\s+with|we'?ll\s+go\s+with|we(?:\s+are|'re)\s+going\s+with"
    r"|the\s+decision\s+is"
    r")[ \t]*(?:to\s+|that\s+|on\s+|:\s*)?"
)
_DECISION_AT_SENTENCE_START = re.compile(
    r"(?:(?:then|so|ok|okay|alright|fine)[, ]+)?"
    r"(?:go\s+with|(?:also\s+)?decided\s+(?:that|to|on))[ \t]*"
)
"""Imperative or subjectless decisions that count only when they open a sentence:
"Then go with RQ on our Redis.", "Also decided that log lines never include bodies."."""
_DIRECTIVE_WORDS = ("decision", "preference", "term", "lesson", "procedure")
_DECISION_WORDS = ("decid", "go with", "going with", "agreed", "settled")
_QUOTES = frozenset("\"'\u201c\u201d\u2018\u2019\u00ab\u00bb")
_CLAUSE_END = re.compile(r"[.;!?](?=\s|$)|\n|$")
_FOR_AS = re.compile(r"\b(?:for|as)\s+(.+)")
_COPULA = re.compile(
    r"^(.{3,60}?)\s+(?:is|are|stays|stay|remains|remain|will\s+be|should\s+be|must\s+be|"
    r"becomes|goes|go|runs|run|uses|use|lives|live|happens|happen|moves|move)\b"
)
"""``<subject> is / stays / runs on / uses …``: what comes before the verb is the subject."""
_LEADING_VERB = re.compile(
    r"^(?:use|using|keep|switch\s+to|move\s+to|migrate\s+to|adopt|go\s+with|stick\s+with|"
    r"stay\s+with|drop|pick|choose|prefer)\s+"
)
_ARTICLES = re.compile(r"\b(?:the|a|an|our|its|their)\b")
_NON_WORD = re.compile(r"[^\w./#+-]+")
_SUBJECT_CUT = re.compile(r"\s*(?:[,;(]|\s-\s|\binstead of\b|\brather than\b|\bnot\b)")


class Statement(NamedTuple):
    """A directive or decision: its type, text, where the text is, and its attributes."""

    start: int
    end: int
    type: str
    text: str
    attributes: dict[str, str]


def normalize_subject(text: str) -> str:
    """Casefolded, articles and punctuation removed, whitespace collapsed, ≤ 80 chars."""
    words = _NON_WORD.sub(" ", _ARTICLES.sub(" ", text.casefold())).split()
    return " ".join(words)[:80].strip()


def decision_subject(clause: str, target: str | None = None) -> str:
    """What a decision is about: ``… for X`` / ``… as X`` gives X, ``X is/stays …`` gives X,
    else the first entity it names, else its first phrase without the leading verb."""
    lowered = clause.casefold()
    for_as = _FOR_AS.search(lowered)
    if for_as:
        subject = _SUBJECT_CUT.split(for_as.group(1), maxsplit=1)[0]
        if normalize_subject(subject):
            return normalize_subject(subject)
    copula = _COPULA.match(lowered)
    if copula and normalize_subject(copula.group(1)):
        return normalize_subject(copula.group(1))
    if target:
        return normalize_subject(target)
    head = _SUBJECT_CUT.split(lowered, maxsplit=1)[0]
    return normalize_subject(_LEADING_VERB.sub("", head.strip())) or normalize_subject(lowered)


def _starts_line(text: str, index: int) -> bool:
    """A directive starts a line (after optional indent and a ``-``/``*``/``>`` bullet)
    or a sentence ("Ok. decision: …")."""
    line_start = text.rfind("\n", 0, index) + 1
    prefix = text[line_start:index]
    if prefix.strip(" \t") in ("", "-", "*", ">"):
        return True
    return prefix[-1:] == " " and prefix.rstrip()[-1:] in (".", "!", "?")


def find_directives(text: str) -> list[Statement]:
    """``kind (scope): text`` lines. The ``scope`` attribute is set only by an explicit
    ``(workspace)`` / ``(user)`` marker; without one the graph writer applies its default."""
    found: list[Statement] = []
    if ":" not in text:
        return found
    lower = ascii_lower(text)
    if not any(keyword in lower for keyword in _DIRECTIVE_WORDS):
        return found
    for match in _DIRECTIVE.finditer(lower):
        if not _starts_line(text, match.start()):
            continue
        keyword, scope, _ = match.groups()
        body = text[match.start(3) : match.end(3)].strip()[:MAX_TEXT_CHARS]
        type_name = DIRECTIVE_KEYWORDS[re.sub(r"[ _-]+", " ", keyword.lower())]
        attributes = {"origin": "directive"}
        if scope:
            attributes["scope"] = scope.lower()
        found.append(Statement(match.start(3), match.end(3), type_name, body, attributes))
    return found


def find_decisions(text: str) -> list[Statement]:
    """Explicit decisions in prose; questions ("have we decided …?") are skipped."""
    found: list[Statement] = []
    lower = ascii_lower(text)
    if not any(w in lower for w in _DECISION_WORDS):
        return found
    matches = [
        m
        for m in _DECISION.finditer(lower)
        if not (m.start() and (lower[m.start() - 1].isalnum() or lower[m.start() - 1] == "_"))
    ]
    matches += [
        m for m in _DECISION_AT_SENTENCE_START.finditer(lower) if _starts_line(text, m.start())
    ]
    for match in sorted(matches, key=lambda m: m.start()):
        before, after = text[max(0, match.start() - 1) : match.start()], text[match.end() :][:1]
        if (before and before in _QUOTES) or (after and after in _QUOTES):
            continue  # the phrase quoted ("we decided" as a trigger word), not a decision
        end = _CLAUSE_END.search(text, match.end())
        stop = end.start() if end else len(text)
        if end is not None and text[stop : stop + 1] == "?":
            continue
        clause = text[match.end() : stop].strip(" \t,:-")
        if len(clause) < 3:
            continue
        clause = clause[:MAX_TEXT_CHARS]
        found.append(
            Statement(match.end(), stop, "Decision", clause, {"origin": "explicit_decision"})
        )
    return found
