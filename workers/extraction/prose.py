"""Statements written in prose: decisions, preferences, terms, lessons, procedures, tasks
and incidents recognised by how the sentence is built, not by a ``keyword:`` prefix.

Each rule is a sentence opener that commits to something; the statement is the rest of
the clause. The rules run on the ASCII-lowered text as one alternation, one ``match``
per sentence start. Why regexes and not spaCy's ``Matcher``: docs/history.md.
"""

from __future__ import annotations

import re

from turngraph.workers.extraction.directives import Statement
from turngraph.workers.extraction.references import ascii_lower

__all__ = ["MAX_TEXT_CHARS", "PACE_WORDS", "find_prose_statements"]

MAX_TEXT_CHARS = 500


_LEAD = (
    r"(?:(?:ok|okay|so|alright|also|and|but|fine|right|yes|yeah|cool|great|then|btw|fyi|"
    r"note|nope|no|sure|agreed|thanks)[,.!:]?\s+){0,3}"
)
"""Words that may open a sentence before the statement's own opener."""

# (type, pattern). The statement text starts where the match ends, or at group "body".
_RULES: tuple[tuple[str, str], ...] = (
    # -- decisions --------------------------------------------------------------------
    ("Decision", r"decided\s*:|decision\s+made\s*:|final\s+decision\s*:|the\s+call\s+is\s*:"),
    (
        "Decision",
        r"(?:going\s+forward|from\s+now\s+on|moving\s+forward|starting\s+(?:today|now|next\s+\w+))\s*[,:]?\s*(?:we'?(?:ll|\s+will)\s+|we\s+)?",
    ),
    ("Decision", r"(?:the\s+)?rule(?:\s+of\s+thumb)?(?:\s+from\s+now\s+on)?(?:\s+is)?\s*:"),
    ("Decision", r"ship\s+it\s+with\s+"),
    (
        "Decision",
        r"we(?:'ve|\s+have)?\s+(?:went|gone|chose|chosen|picked|settled)\s+(?:with|on)?\s*",
    ),
    (
        "Decision",
        r"we(?:'re|\s+are)\s+(?:standardi[sz]ing|standardi[sz]ed|moving|switching|migrating)\s+(?:on|to)\s+",
    ),
    (
        "Decision",
        r"let'?s\s+(?!not\s+waste|move\s+on\b)"
        r"(?=not\s|keep\s|stick\s|stay\s|use\s|switch\s|move\s|standardi|drop\s|avoid\s)",
    ),
    (
        "Decision",
        r"we(?:'ll|\s+will)\s+(?=keep\s|use\s|stick\s|stay\s|switch\s|move\s|standardi|drop\s|go\s+with\s)",
    ),
    # -- preferences ------------------------------------------------------------------
    (
        "Preference",
        r"i'?d\s+(?:much\s+)?rather\s+(?:we\s+|you\s+)?|i\s+would\s+rather\s+(?:we\s+|you\s+)?",
    ),
    (
        "Preference",
        r"i\s+(?:really\s+)?prefer\s+|i'?d\s+prefer\s+(?:that\s+|if\s+)?|i\s+would\s+prefer\s+(?:that\s+|if\s+)?",
    ),
    ("Preference", r"i\s+(?:always\s+)?(?:want|like)\s+(?=all\s|every\s|our\s|the\s|my\s|new\s)"),
    (
        "Preference",
        r"please\s+(?=always\s|never\s|don'?t\s|do\s+not\s|use\s|avoid\s|keep\s|prefer\s)",
    ),
    ("Preference", r"(?:make\s+sure\s+(?:you\s+|to\s+)?|remember\s+to\s+)(?=always\s|never\s)"),
    ("Preference", r"(?:our|the|my)\s+convention(?:\s+is)?\s*:?\s*"),
    ("Preference", r"(?:we|i)\s+(?=always\s|never\s)"),
    (
        "Preference",
        r"(?!never\s+mind|always\s+(?:happy|glad|welcome|a\s+pleasure|fun|nice|good)\b)"
        r"(?=always\s|never\s|don'?t\s+(?:ever\s+)?(?:suggest|use|add|commit|push|put|call|import|merge))",
    ),
    ("Preference", r"keep\s+in\s+mind\s+(?:that\s+)?[^.;!?\n]*?[,;]\s*(?=never\s|always\s)"),
    # -- terminology ------------------------------------------------------------------
    ("Terminology", r"(?:by|when\s+(?:we|i)\s+say)\s+(?=['\"\u2018\u201c`])"),
    (
        "Terminology",
        r"(?=['\"\u2018\u201c`][^'\"\u2019\u201d`\n]{1,40}['\"\u2019\u201d`]\s+(?:means|stands\s+for|refers\s+to)\s)",
    ),
    ("Terminology", r"we\s+call\s+(?=['\"\u2018\u201c`])"),  # we call 'x' …; not "call it done"
    # -- lessons ----------------------------------------------------------------------
    (
        "LessonLearned",
        r"lessons?\s+learn(?:ed|t)(?:\s+(?:from|the\s+hard\s+way)[^:\n]{0,40})?\s*:?\s*",
    ),
    (
        "LessonLearned",
        r"(?:note\s+for\s+the\s+future|note\s+to\s+self|for\s+future\s+reference|gotcha|til)\s*:\s*",
    ),
    ("LessonLearned", r"(?:we|i)\s+learned\s+(?:the\s+hard\s+way\s+)?(?:that\s+)?"),
    ("LessonLearned", r"learned\s+the\s+hard\s+way\s*(?:that\s+|:\s*)"),
    # -- procedures -------------------------------------------------------------------
    ("Procedure", r"(?:the\s+)?(?:\w+\s+)?procedure(?:\s+for\s+[^:\n]{1,60})?\s*(?:is\s*)?:\s*"),
    (
        "Procedure",
        r"(?:to|how\s+to)\s+(?:release|deploy|ship|publish|roll\s*back|migrate|upgrade|restore|rotate|bootstrap|set\s+up|cut\s+a\s+release)[^:\n.]{0,40}:\s*",
    ),
    ("Procedure", r"steps?\s+to\s+[^:\n]{1,60}:\s*"),
    # -- tasks ------------------------------------------------------------------------
    ("Task", r"(?:todo|to-do|action\s+items?|next\s+steps?|follow[- ]up)\s*:\s*"),
    ("Task", r"(?:we\s+|i\s+)?still\s+(?:need|have)\s+to\s+"),
    ("Task", r"(?:someone|we|i)\s+(?:needs?|has|have)\s+to\s+(?=\w+\s)(?!be\s|have\s)"),
    ("Task", r"(?:remind\s+me\s+to|don'?t\s+forget\s+to|need\s+to\s+remember\s+to)\s+"),
    (
        "Task",
        r"let'?s\s+(?=open\s|add\s|write\s|create\s|file\s|schedule\s|set\s+up\s|look\s+into\s|investigate\s|track\s)",
    ),
    ("Task", r"- \[ \]\s+"),
    # -- incidents --------------------------------------------------------------------
    (
        "Incident",
        r"(?:we\s+had\s+(?:an?\s+)?|there\s+was\s+(?:an?\s+)?)(?:\w+\s+){0,2}(?:outage|incident|downtime)[^:.\n]{0,40}:\s*",
    ),
    (
        "Incident",
        r"(?:outage|incident|postmortem|post-mortem|sev\s*[0-4]|p[0-2]|alert\s+fired)\s*:\s*",
    ),
    (
        "Incident",
        r"(?:[a-z][a-z0-9]{1,9}-\d{1,6})\s*:\s*(?=[^\n]{0,80}\b(?:down|spiked|outage|failing|stopped|crash|degraded|timeouts?|errors?\s+rate|5\d\d)\b)",
    ),
)

_TYPES = tuple(type_name for type_name, _ in _RULES)
_ANY_RULE = re.compile("|".join(f"(?P<r{i}>{pattern})" for i, (_, pattern) in enumerate(_RULES)))
"""All rules as one alternation: one ``match`` per sentence start, the first rule wins."""
_STARTS = re.compile(
    r"\n[ \t]*(?:[-*>]|\d+[.)])?[ \t]*|[.!?:][ \t]+(?=\S)|\(\s*"
    r"|,?\s(?:and|but|so|then)\s+(?=let'?s\s|we'?ll\s|we\s+will\s|i'?d\s|please\s)"
    r"|,\s+(?=(?:don'?t|never|always|please)\s)"
)
"""Where a statement may start: a line, a sentence, a clause joined by "and let's …"."""
_CLAUSE_AFTER_COMMA = re.compile(r",\s*$")
_SENTENCE_BOUNDARY = re.compile(r"\n|[.!?:;][ \t]+(?=\S)")
"""Where the sentence holding a clause starts (a line, a sentence, a colon's list)."""
_LEAD_RE = re.compile(_LEAD)
_CLAUSE_END = re.compile(r"[.;!?](?=\s|$)|\n|$")
_QUESTION_START = re.compile(r"(?:do|does|did|should|shall|can|could|would|will|is|are)\b")


PACE_WORDS = frozenset(
    {
        "move", "moving", "on", "keep", "keeping", "going", "rolling", "this", "that", "it",
        "things", "them", "not", "waste", "wasting", "any", "more", "time", "use", "stick",
        "stay", "with", "here", "there", "now", "then", "forward", "ahead", "focused", "the",
        "ball", "momentum", "up", "get", "started", "go",
    }
)  # fmt: skip
"""Words of a clause that only sets the pace of the conversation ("let's keep this
moving", "we'll keep going", "let's use it"): such a clause names no choice, so it is no
Decision (issue 20: decisions that are decisions; RealMem made topics "Moving" and
"Waste time" of them)."""


def _pace_only(clause: str) -> bool:
    return all(word in PACE_WORDS for word in re.findall(r"[a-z']+", clause.lower()))


def _sentence_starts(lower: str) -> list[int]:
    """Offsets where a line or a sentence starts (after bullets and a lead-in word)."""
    starts = [0]
    for match in _STARTS.finditer(lower):
        starts.append(match.end())
    out = []
    for start in starts:
        while start < len(lower) and lower[start] in " \t":
            start += 1
        out.append(start)
        lead = _LEAD_RE.match(lower, start)
        if lead and lead.end() > start:
            out.append(lead.end())
    return sorted(set(out))


def find_prose_statements(text: str) -> list[Statement]:
    """Statements opened by a prose pattern at the start of a line or sentence."""
    lower = ascii_lower(text)
    found: list[Statement] = []
    taken_until = -1
    for start in _sentence_starts(lower):
        if start < taken_until or start >= len(lower):
            continue
        match = _ANY_RULE.match(lower, start)
        if match is None or match.lastgroup is None:
            continue
        body = match.end()
        end = _CLAUSE_END.search(text, body)
        stop = end.start() if end else len(text)
        if text[stop : stop + 1] == "?" or _QUESTION_START.match(lower, start):
            continue  # a question proposes, it does not decide
        opening = body
        if body == start and _CLAUSE_AFTER_COMMA.search(lower, 0, start):
            # ", never …" opens a clause of a sentence that states it whole: "We store money
            # as integer cents, never as float" is kept from its start, not as a fragment.
            opening = max(
                (m.end() for m in _SENTENCE_BOUNDARY.finditer(lower, 0, start)), default=0
            )
        clause = text[opening:stop].strip(" \t,:-")
        if len(clause) < 3 or len(clause.split()) < 2:
            continue
        type_name = _TYPES[int(match.lastgroup[1:])]
        if type_name == "Decision" and _pace_only(clause):
            continue  # "let's keep this moving" sets the pace, it chooses nothing
        attributes = {"origin": "prose"}
        found.append(Statement(body, stop, type_name, clause[:MAX_TEXT_CHARS], attributes))
        taken_until = stop
    return found
