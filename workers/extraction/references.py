"""Precompiled finders for what a developer chat turn references by number or address.

Each finder returns ``Hit``s: a span of the text, an ontology type and a canonical name.
Names follow one convention (the labelled dataset uses the same): commits as lowercase
hex; pull requests and issues as ``#N``, ``owner/repo#N`` or a tracker key (``PAY-2041``);
plans as ``PLAN-12``, ``Plan 10.2``, ``Phase 3``; URLs without credentials. Files and
branches are in :mod:`workers.extraction.paths`, symbols in :mod:`workers.extraction.code`.
"""

from __future__ import annotations

import re
import string
from functools import lru_cache
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = [
    "Hit", "ascii_lower", "attached", "clean_url", "code_spans", "fence_tags", "fenced_spans",
    "find_commits", "find_mentions", "find_numbered_refs", "find_plans", "find_qualified_refs",
    "find_tracker_keys", "find_urls",
]  # fmt: skip


class Hit(NamedTuple):
    start: int
    end: int
    type: str
    name: str


_DIGIT = re.compile(r"\d")
_SCHEME_BEFORE = re.compile(r"[a-zA-Z][a-zA-Z0-9+.-]{1,15}$")
_URL_REST = re.compile(r"[^\s<>\"'`)\]}]+")
_GITHUB = re.compile(
    r"^(?:www\.)?github\.com/([A-Za-z0-9][\w.-]{0,38})/([\w.-]{1,100})(?:/(pull|issues|commit)/(\w+))?"
)
_SECRET_PARAM = re.compile(r"(?i)token|key|secret|passw|sig|auth|credential|code|session")
_NUMBER_SIGN = re.compile(r"#(\d{1,7})\b")
_OWNER_REPO_BEFORE = re.compile(r"([A-Za-z0-9][\w.-]{0,38})/([\w.-]{1,100})$")
# Patterns run on ascii_lower(text) start with a literal, not an assertion: the regex
# engine then skips ahead quickly; the "not inside a word" check is done on the match.
# A plural needs "#": "PRs #4" is a reference, "bugs 3 times" is not.
_PR = re.compile(
    r"(?:pr|pull\s+request|mr|merge\s+request)\s*(?:#\s*)?(\d{1,7})\b"
    r"|(?:prs|pull\s+requests|mrs|merge\s+requests)\s*#\s*(\d{1,7})\b"
)
_ISSUE = re.compile(
    r"(?:issue|ticket|bug)\s*#?\s*(\d{1,7})\b|(?:issues|tickets|bugs)\s*#\s*(\d{1,7})\b"
)
_HASH_REF = re.compile(r"#(\d{1,7})\b(?!-)")
_TRACKER_KEY = re.compile(r"(?<![\w/.#-])([A-Z][A-Z0-9]{1,9})-(\d{1,6})(?![\w-]|\.\d)")
_NOT_TRACKERS = frozenset(
    [
        "UTF", "SHA", "MD", "AES", "RSA", "DES", "ISO", "RFC", "HTTP", "TLS", "SSL", "ES", "ECMA",
        "PEP", "IPV", "CP", "WIN", "GPT", "BASE", "COVID", "MP", "CVE", "CWE", "GHSA", "ID", "TCP",
        "UDP", "DNS", "PLAN", "PHASE", "STEP", "SEV", "P", "NO", "NR", "VOL", "PT", "X", "Y", "Z",
        "V", "UX", "AB", "USB", "HDMI", "ARM", "AMD", "NVME", "PCI", "DDR", "LTS", "RC", "GA",
        "API", "OS", "SDK", "JDK", "JRE", "CSS", "HTML", "JSON", "XML", "YAML", "H",
    ]
)  # fmt: skip
"""Prefixes of ``ABC-123`` that are standards, versions or severities, not tracker keys."""
_COLOUR_WORDS = re.compile(
    r"(?i)colou?r|#[0-9a-f]{0,5}[a-f][0-9a-f]{0,5}\b|\bhex\b|\bcss\b|\bbackground|\bborder|\bfill\b"
)
_PR_BEFORE = re.compile(r"\b(?:pr|pull request|mr)\s*$")
_RANK_BEFORE = re.compile(r"(?i)\b(?:the|my|our|your|a|is|number)\s+$")
_COMMIT = re.compile(r"([0-9a-f]{7,40})(?![\w-]|\.\w)")
_PLAN_ID = re.compile(r"plan-(\d+(?:\.\d+)*)\b")
_PLAN_WORD = re.compile(r"(plan|phase|milestone)(?:\s+|-)(\d+(?:\.\d+)*|[ivx]+\b)(?![\w%])")
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`")
_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_MENTION = re.compile(r"(?<![\w.@/`])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?)\b(?![.@/])")
_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


@lru_cache(maxsize=4)
def ascii_lower(text: str) -> str:
    """``text`` with A-Z lowered and nothing else changed: offsets stay valid
    (``str.lower`` may change the length of some non-ASCII text)."""
    return text.translate(_ASCII_LOWER)


def _word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _free_before(text: str, index: int, also: str = "") -> bool:
    """True when ``text[index]`` does not continue a word (or one of ``also``)."""
    if index == 0:
        return True
    before = text[index - 1]
    return not (_word_char(before) or before in also)


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks (```), where prose rules don't apply."""
    return [m.span() for m in _FENCE.finditer(text)] if "```" in text else []


_FENCE_TAG = re.compile(r"```[ \t]*([\w+#.-]+)")


def fence_tags(text: str) -> list[tuple[int, int]]:
    """Spans of fence language tags (```` ```python ````): a tag is not a mention."""
    return [m.span(1) for m in _FENCE_TAG.finditer(text)] if "```" in text else []


def code_spans(text: str) -> list[tuple[int, int, str]]:
    """Inline `code spans`: (start, end, inner text)."""
    return [(m.start(), m.end(), m.group(1).strip()) for m in _CODE_SPAN.finditer(text)]


def clean_url(raw: str) -> str:
    """The URL without trailing punctuation, credentials, or secret-looking query values."""
    url = raw.rstrip(".,;:!?'\"")
    try:
        parts = urlsplit(url)
        netloc = parts.netloc.rsplit("@", 1)[-1]
        query = parts.query
        if query:
            kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True)
                    if not _SECRET_PARAM.search(k)]  # fmt: skip
            query = urlencode(kept)
        return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))
    except ValueError:  # an unparsable port or bracket: still drop any userinfo
        return re.sub(r"//[^/@\s]*@", "//", url)


def find_urls(text: str) -> list[Hit]:
    """URLs, and the repository, pull request, issue or commit a GitHub URL points at."""
    hits: list[Hit] = []
    if "://" not in text:
        return hits
    position = text.find("://")
    while position != -1:
        scheme = _SCHEME_BEFORE.search(text, max(0, position - 16), position)
        rest = _URL_REST.match(text, position + 3)
        found_at, position = position, text.find("://", position + 3)
        if scheme is None or rest is None or not _free_before(text, scheme.start()):
            continue
        raw = text[scheme.start() : rest.end()]
        url = clean_url(raw)
        start, end = scheme.start(), scheme.start() + len(raw.rstrip(".,;:!?'\""))
        if end <= found_at + 3:
            continue
        hits.append(Hit(start, end, "Url", url))
        gh = _GITHUB.match(url.split("://", 1)[1])
        if gh:
            owner, repo, kind, ident = gh.groups()
            repo = repo.removesuffix(".git")
            hits.append(Hit(start, end, "Repository", f"{owner}/{repo}"))
            if kind == "pull" and ident and ident.isdigit():
                hits.append(Hit(start, end, "PullRequest", f"{owner}/{repo}#{ident}"))
            elif kind == "issues" and ident and ident.isdigit():
                hits.append(Hit(start, end, "Issue", f"{owner}/{repo}#{ident}"))
            elif kind == "commit" and ident:
                hits.append(Hit(start, end, "Commit", ident.lower()))
    return hits


def find_qualified_refs(text: str) -> list[Hit]:
    """``owner/repo#N``: an issue (or a pull request when the text says PR) and its repo."""
    hits: list[Hit] = []
    if "#" not in text or "/" not in text:
        return hits
    for sign in _NUMBER_SIGN.finditer(text):
        ref = _OWNER_REPO_BEFORE.search(text, max(0, sign.start() - 140), sign.start())
        if ref is None or not _free_before(text, ref.start(), "/.#-"):
            continue
        owner, repo = ref.groups()
        number = sign.group(1)
        before = text[max(0, ref.start() - 16) : ref.start()].lower()
        kind = "PullRequest" if _PR_BEFORE.search(before) else "Issue"
        hits.append(Hit(ref.start(), sign.end(), kind, f"{owner}/{repo}#{number}"))
        hits.append(Hit(ref.start(), sign.end(), "Repository", f"{owner}/{repo}"))
    return hits


def find_numbered_refs(text: str) -> list[Hit]:
    """``PR 45``, ``pull request #45``, ``issue 12`` and bare ``#123`` (an issue)."""
    if _DIGIT.search(text) is None:
        return []
    lower = ascii_lower(text)
    hits = [
        Hit(*m.span(), "PullRequest", f"#{m.group(1) or m.group(2)}")
        for m in _PR.finditer(lower)
        if _free_before(lower, m.start(), "/")
    ]
    hits += [
        Hit(*m.span(), "Issue", f"#{m.group(1) or m.group(2)}")
        for m in _ISSUE.finditer(lower)
        if _free_before(lower, m.start(), "/")
    ]
    if "#" in text:
        colours: bool | None = None  # looked for only when a number could be a colour
        for match in _HASH_REF.finditer(text):
            if not _free_before(text, match.start(), "&/#"):
                continue
            if any(h.start <= match.start() < h.end for h in hits):
                continue  # the "#45" of "PR #45"
            number = match.group(1)
            if len(number) in (3, 6, 8):
                if colours is None:
                    colours = _COLOUR_WORDS.search(text) is not None
                if colours or len(number) == 6:
                    continue  # "#374151": a colour, not issue three hundred thousand
            # "the #1 thing", "our #2 priority": a rank, not a reference
            if int(number) <= 10 and _RANK_BEFORE.search(text, 0, match.start()):
                continue
            hits.append(Hit(*match.span(), "Issue", f"#{number}"))
    return hits


def find_tracker_keys(text: str) -> list[Hit]:
    """``PAY-2041``, ``GH-77``: an issue in a tracker (Jira, Linear, GitHub, YouTrack)."""
    if "-" not in text or _DIGIT.search(text) is None:
        return []
    return [
        Hit(*m.span(), "Issue", m.group(0))
        for m in _TRACKER_KEY.finditer(text)
        if m.group(1) not in _NOT_TRACKERS and not m.group(1).isdigit()
    ]


def find_commits(text: str) -> list[Hit]:
    """Hex strings of 7 to 40 digits with at least one digit and one letter."""
    hits: list[Hit] = []
    if _DIGIT.search(text) is None:
        return hits
    for match in _COMMIT.finditer(text):
        sha = match.group(1)
        if not _free_before(text, match.start(), "/#.@:-"):
            continue
        if not sha.isdigit() and any(c.isdigit() for c in sha):
            hits.append(Hit(*match.span(1), "Commit", sha))
    return hits


def find_plans(text: str) -> list[Hit]:
    """``PLAN-12``, ``plan 10.2``, ``Phase 3``, ``milestone 2``."""
    lower = ascii_lower(text)
    if _DIGIT.search(text) is None and "phase" not in lower:
        return []
    if "plan" not in lower and "phase" not in lower and "milestone" not in lower:
        return []
    hits = [
        Hit(*m.span(), "Plan", f"PLAN-{m.group(1)}")
        for m in _PLAN_ID.finditer(lower)
        if _free_before(lower, m.start(), "-")
    ]
    for match in _PLAN_WORD.finditer(lower):
        if not _free_before(lower, match.start()):
            continue
        if any(h.start <= match.start() < h.end for h in hits):
            continue  # the "PLAN-12" already found
        number = text[match.start(2) : match.end(2)]  # as written: "Phase II"
        hits.append(Hit(*match.span(), "Plan", f"{match.group(1).capitalize()} {number}"))
    return hits


def find_mentions(text: str) -> list[Hit]:
    """``@handle`` mentions of people (outside code)."""
    if "@" not in text:
        return []
    return [Hit(*m.span(), "Person", m.group(1)) for m in _MENTION.finditer(text)]


_ATTACHED_TYPES = {
    "file": "File",
    "plan": "Plan",
    "branch": "Branch",
    "issue": "Issue",
    "pull_request": "PullRequest",
    "commit": "Commit",
    "url": "Url",
}


def attached(kind: str, value: str) -> tuple[str, str] | None:
    """The entity a producer-attached reference (``TurnEvent.references``) names, in the
    same naming convention as the finders; None for ``other`` or an unusable value."""
    type_name = _ATTACHED_TYPES.get(kind)
    value = value.strip()
    if type_name is None or not value:
        return None
    if type_name == "File":
        value = value.removeprefix("./")
    elif type_name == "Plan":
        plans = find_plans(value)
        value = plans[0].name if plans else value
    elif type_name in ("Issue", "PullRequest") and value.isdigit():
        value = f"#{value}"
    elif type_name == "Commit":
        value = value.lower()
    elif type_name == "Url":
        value = clean_url(value)
    return type_name, value[:500]
