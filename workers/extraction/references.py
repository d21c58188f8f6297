"""Precompiled finders for what a developer chat turn references by name.

Each finder returns ``Hit``s: a span of the text, an ontology type and a canonical name.
Names follow one convention (the labelled dataset uses the same): files as written
without ``./`` or ``:line``; commits as lowercase hex; pull requests and issues as ``#N``
or ``owner/repo#N``; plans as ``PLAN-12``, ``Plan 10.2``, ``Phase 3``; URLs without
credentials.
"""

from __future__ import annotations

import re
from typing import NamedTuple
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit


class Hit(NamedTuple):
    start: int
    end: int
    type: str
    name: str


_EXTENSION_WORDS = (
    "py pyi pyx md rst txt toml yaml yml json jsonl lua cypher cql ts tsx js jsx mjs cjs go "
    "rs java kt rb php c h cc cpp hpp cs swift sh bash zsh ps1 sql ttl owl html css scss ini "
    "cfg conf env lock xml csv ipynb proto graphql tf gradle mk vue svelte grass log patch "
    "diff dockerfile"
)
FILE_EXTENSIONS = frozenset(_EXTENSION_WORDS.split())
"""Extensions that make a bare name (no ``/``) a file: ``loop.py``, ``pyproject.toml``."""

EXTENSIONLESS_FILES = (
    "README", "Makefile", "Dockerfile", "Procfile", "LICENSE", "CHANGELOG", "Justfile",
    "Gemfile", "Jenkinsfile", "Vagrantfile", "CODEOWNERS",
)  # fmt: skip

BRANCH_PREFIXES = (
    "feature", "feat", "fix", "bugfix", "hotfix", "release", "chore", "refactor", "perf",
    "wip", "experiment", "spike", "dependabot", "renovate",
)  # fmt: skip

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]{1,15}://[^\s<>\"'`)\]}]+")
_GITHUB = re.compile(
    r"^(?:www\.)?github\.com/([A-Za-z0-9][\w.-]{0,38})/([\w.-]{1,100})(?:/(pull|issues|commit)/(\w+))?"
)
_SECRET_PARAM = re.compile(r"(?i)token|key|secret|passw|sig|auth|credential|code|session")
_QUALIFIED_REF = re.compile(r"(?<![\w/.#-])([A-Za-z0-9][\w.-]{0,38})/([\w.-]{1,100})#(\d{1,7})\b")
_PR = re.compile(
    r"(?i)(?<![\w/])(?:PRs?|pull\s+requests?|MRs?|merge\s+requests?)\s*(?:#\s*)?(\d{1,7})\b"
)
_ISSUE = re.compile(r"(?i)(?<![\w/])(?:issues?|tickets?|bugs?)\s*#?\s*(\d{1,7})\b")
_HASH_REF = re.compile(r"(?<![\w&/#])#(\d{1,7})\b(?!-)")
_RANK_BEFORE = re.compile(r"(?i)\b(?:the|my|our|your|a|is|number)\s+$")
_PATH_TOKEN = re.compile(r"[^\s`'\"()\[\]{}<>,;|*]*[./][^\s`'\"()\[\]{}<>,;|*]*")
_EXT = re.compile(r"\.([A-Za-z][A-Za-z0-9]{0,9})$")
_EXTENSIONLESS = re.compile(r"(?<![\w./-])(" + "|".join(EXTENSIONLESS_FILES) + r")(?![\w-]|\.\w)")
_BRANCH_PREFIXED = re.compile(
    r"(?<![\w/.-])((?:" + "|".join(BRANCH_PREFIXES) + r")/[\w][\w./-]*[\w])(?![\w/]|\.\w)"
)
_BRANCH_NAMED = re.compile(
    r"(?i)\bbranch\s+(?:called\s+|named\s+)?`?([\w][\w./-]*[\w])`?"
    r"|`([\w][\w./-]*[\w])`\s+branch\b"
)
_GIT_SWITCH = re.compile(r"\bgit\s+(?:checkout|switch)\s+(?:-[bcBC]\s+)?([\w][\w./-]*[\w])")
_TRUNK = re.compile(
    r"\b(?:on|onto|into|from|to|against|off|of|in|rebase|rebased|merge|merged|latest|pull|"
    r"pulled|pulling)\s+(?:the\s+|latest\s+)?"
    r"`?(main|master|develop|trunk)`?(?![\w/-]|\.\w)"
)
_COMMIT = re.compile(r"(?<![\w/#.@:-])([0-9a-f]{7,40})(?![\w-]|\.\w)")
_PLAN_ID = re.compile(r"(?i)(?<![\w-])PLAN-(\d+(?:\.\d+)*)\b")
_PLAN_WORD = re.compile(r"(?i)\b(plan|phase|milestone)(?:\s+|-)(\d+(?:\.\d+)*|[IVX]+\b)(?![\w%])")
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`")
_FENCE = re.compile(r"```.*?(?:```|$)", re.S)
_SYMBOL = re.compile(r"^([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*)(?:\([^()]*\))?$")
_EXCEPTION_NAME = re.compile(
    r"(?<![\w.`'\"])((?:[A-Z][a-z0-9]+)+(?:Error|Exception|Failed|Failure|Warning|Timeout))\b"
)
_TEST_ID = re.compile(r"(?:::|(?<![\w./:]))(test_\w+)\b(?!\.\w)")
_MENTION = re.compile(r"(?<![\w.@/`])@([A-Za-z0-9](?:[A-Za-z0-9-]{0,37}[A-Za-z0-9])?)\b(?![.@/])")
_NOT_SYMBOLS = frozenset({"True", "False", "None", "null", "true", "false", "nil", "self"})
_NON_BRANCH_WORDS = frozenset({"is", "was", "and", "or", "the", "that", "this", "for", "with"})


def fenced_spans(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks (```), where prose rules don't apply."""
    return [m.span() for m in _FENCE.finditer(text)] if "```" in text else []


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
    for match in _URL.finditer(text):
        url = clean_url(match.group(0))
        start, end = match.start(), match.start() + len(match.group(0).rstrip(".,;:!?'\""))
        hits.append(Hit(start, end, "Url", url))
        rest = url.split("://", 1)[1]
        gh = _GITHUB.match(rest)
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
    if "#" not in text:
        return hits
    for match in _QUALIFIED_REF.finditer(text):
        owner, repo, number = match.groups()
        before = text[max(0, match.start() - 16) : match.start()].lower()
        kind = "PullRequest" if re.search(r"\b(?:pr|pull request|mr)\s*$", before) else "Issue"
        hits.append(Hit(match.start(), match.end(), kind, f"{owner}/{repo}#{number}"))
        hits.append(Hit(match.start(), match.end(), "Repository", f"{owner}/{repo}"))
    return hits


def find_numbered_refs(text: str) -> list[Hit]:
    """``PR 45``, ``pull request #45``, ``issue 12`` and bare ``#123`` (an issue)."""
    hits = [Hit(*m.span(), "PullRequest", f"#{m.group(1)}") for m in _PR.finditer(text)]
    hits += [Hit(*m.span(), "Issue", f"#{m.group(1)}") for m in _ISSUE.finditer(text)]
    if "#" in text:
        for match in _HASH_REF.finditer(text):
            if any(h.start <= match.start() < h.end for h in hits):
                continue  # the "#45" of "PR #45"
            number = match.group(1)
            # "the #1 thing", "our #2 priority": a rank, not a reference
            if int(number) <= 10 and _RANK_BEFORE.search(text, 0, match.start()):
                continue
            hits.append(Hit(*match.span(), "Issue", f"#{number}"))
    return hits


def _path_name(token: str) -> str | None:
    token = token.split("::", 1)[0]
    token = re.sub(r"(?::\d+){1,2}$", "", token.rstrip(".:!?"))
    token = token.removeprefix("./")
    if not token or "://" in token or "#" in token or "@" in token:
        return None
    ext = _EXT.search(token)
    if ext is None:
        return None
    if "/" in token:
        return token if len(token) > len(ext.group(0)) + 1 else None
    if ext.group(1).lower() not in FILE_EXTENSIONS:
        return None
    stem = token[: -len(ext.group(0))]
    if not stem or (ext.group(1) == "js" and stem[:1].isupper()):  # Node.js, Vue.js
        return None
    return token


def find_files(text: str) -> list[Hit]:
    """Paths with an extension (any, when there is a ``/``), and well-known files."""
    hits: list[Hit] = []
    for match in _PATH_TOKEN.finditer(text):
        name = _path_name(match.group(0))
        if name:
            hits.append(Hit(match.start(), match.end(), "File", name))
    hits += [Hit(*m.span(), "File", m.group(1)) for m in _EXTENSIONLESS.finditer(text)]
    return hits


def find_branches(text: str) -> list[Hit]:
    """``feature/x``-style names, ``branch X``, ``git checkout -b X``, and ``on main``."""
    hits = [Hit(*m.span(1), "Branch", m.group(1)) for m in _BRANCH_PREFIXED.finditer(text)]
    if "branch" in text.lower():
        for match in _BRANCH_NAMED.finditer(text):
            name = match.group(1) or match.group(2)
            quoted = match.group(2) is not None or "`" in match.group(0)
            if name.lower() in _NON_BRANCH_WORDS:
                continue
            if quoted or any(c in name for c in "/-_") or name in ("main", "master", "develop"):
                hits.append(Hit(*match.span(), "Branch", name))
    if "git " in text:
        hits += [Hit(*m.span(1), "Branch", m.group(1)) for m in _GIT_SWITCH.finditer(text)]
    hits += [Hit(*m.span(1), "Branch", m.group(1)) for m in _TRUNK.finditer(text)]
    return hits


def find_commits(text: str) -> list[Hit]:
    """Hex strings of 7 to 40 digits with at least one digit and one letter."""
    hits: list[Hit] = []
    for match in _COMMIT.finditer(text):
        sha = match.group(1)
        if not sha.isdigit() and any(c.isdigit() for c in sha):
            hits.append(Hit(*match.span(1), "Commit", sha))
    return hits


def find_plans(text: str) -> list[Hit]:
    """``PLAN-12``, ``plan 10.2``, ``Phase 3``, ``milestone 2``."""
    hits = [Hit(*m.span(), "Plan", f"PLAN-{m.group(1)}") for m in _PLAN_ID.finditer(text)]
    for match in _PLAN_WORD.finditer(text):
        if any(h.start <= match.start() < h.end for h in hits):
            continue  # the "PLAN-12" already found
        word, number = match.groups()
        hits.append(Hit(*match.span(), "Plan", f"{word.capitalize()} {number}"))
    return hits


def symbol_name(code: str) -> str | None:
    """The symbol a code span names (``foo()`` -> ``foo``), or None for commands, values."""
    match = _SYMBOL.match(code)
    if match is None:
        return None
    name = match.group(1)
    if name in _NOT_SYMBOLS or (name.isupper() and "_" not in name and "." not in name):
        return None  # values and commands/keywords (MERGE, BLPOP), not code symbols
    return name


def find_prose_symbols(text: str) -> list[Hit]:
    """Symbols recognisable outside code spans: exception class names
    (``ConstraintValidationFailed``) and pytest node ids (``file.py::test_x``)."""
    hits = [Hit(*m.span(1), "Symbol", m.group(1)) for m in _EXCEPTION_NAME.finditer(text)]
    if "test_" in text:
        hits += [Hit(*m.span(1), "Symbol", m.group(1)) for m in _TEST_ID.finditer(text)]
    return hits


def find_mentions(text: str) -> list[Hit]:
    """``@handle`` mentions of people (outside code)."""
    if "@" not in text:
        return []
    return [Hit(*m.span(), "Person", m.group(1)) for m in _MENTION.finditer(text)]
