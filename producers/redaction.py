"""Secret redaction: applied in the producer before publishing, and again in the worker.

Hand-written, not a scanner library (those report findings in files and cost
milliseconds; this rewrites chat text in place in microseconds, on the producer's hot
path): every rule names literal triggers, one Aho-Corasick pass (``ahocorasick-rs``)
finds them all, and each rule's pattern runs only around its triggers. A secret becomes
``[REDACTED:<kind>]`` (in ``key = value`` shapes only the value); ``redact`` is
idempotent. What is found: docs/producers.md ("Privacy before anything leaves").
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

import ahocorasick_rs

from turngraph.schemas.turn_event import (
    MAX_CLIENT_NAME_CHARS,
    MAX_CLIENT_VERSION_CHARS,
    MAX_CONTENT_CHARS,
    MAX_GIT_BRANCH_CHARS,
    MAX_GIT_REPOSITORY_CHARS,
    MAX_REFERENCE_CHARS,
    MAX_SPEAKER_CHARS,
    MAX_TAG_CHARS,
    ClientInfo,
    Reference,
    TurnEvent,
)

__all__ = [
    "DENSE_TRIGGER_CHARS", "HASHED_ID_PREFIX", "PLACEHOLDER", "RULES", "TRUNCATED_MARKER",
    "RedactedEvent", "Rule", "contains_secret", "find_secrets", "fit", "looks_secret", "redact",
    "redact_and_fit", "redact_event", "secret_free_id",
]  # fmt: skip

PLACEHOLDER = "[REDACTED:{kind}]"
"""What a secret is replaced with."""

_SECRET_NAME = (
    r"(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|apikey|access[_-]?key"
    r"(?:[_-]?id)?|secret[_-]?key|private[_-]?key|client[_-]?secret|auth|credentials?"
    r"|session[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key|dsn"
    r"|conn(?:ection)?[_-]?string)"
)
"""Key names whose values are secrets; a key must END with one (``max_tokens`` does not)."""

_CODE_WORDS = (
    "str|string|bytes|int|none|null|undefined|true|false|optional|any|self|this|secretstr"
    "|required|os|env|process|config|settings|getenv|input|prompt"
)
"""Values that are code, not secrets: ``password: str``, ``token = None``, ``env.TOKEN``."""

_B = r"(?<![A-Za-z0-9_-])"  # a token starts here, not inside a longer word
_E = r"(?![A-Za-z0-9_-])"


@dataclass(frozen=True)
class Rule:
    """One kind of secret.

    ``triggers`` are lowercase literals found by the automaton. By default a match must
    start exactly ``offset`` characters before a trigger (one ``Pattern.match`` call);
    with ``window`` set, a match is searched for that starts within ``window`` characters
    from there (``-1``: to the end), for secrets whose position is not fixed by the
    trigger; such a pattern's matches must be shorter than its window.
    ``group`` names the part of a match that is secret (default: all of it).
    """

    kind: str
    pattern: re.Pattern[str]
    triggers: tuple[str, ...]
    offset: int = 0
    window: int | None = None
    group: tuple[str, ...] = ()


def _rule(
    kind: str,
    pattern: str,
    triggers: tuple[str, ...],
    *,
    offset: int = 0,
    window: int | None = None,
    flags: int = 0,
    group: tuple[str, ...] = (),
) -> Rule:
    return Rule(kind, re.compile(pattern, flags), triggers, offset, window, group)


_KEY_NAMES = tuple(
    f"{base}{sep}key"
    for base in ("api", "access", "private", "session", "signing", "encryption", "master")
    for sep in ("_", "-", "")
)
"""Triggers for names ending in "key", so that a bare "key" in prose triggers nothing."""


RULES: tuple[Rule, ...] = (
    _rule(
        "private_key",
        r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----.*?"
        r"(?:-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ("-----begin",),
        flags=re.DOTALL,
    ),
    _rule(
        "jwt",
        _B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}" + _E,
        ("eyj",),
    ),
    _rule("anthropic_key", _B + r"sk-ant-[A-Za-z0-9_-]{20,}", ("sk-ant-",)),
    _rule(
        "openai_key",
        _B + r"sk-(?:proj-|svcacct-|admin-|None-)?[A-Za-z0-9_-]{20,}",
        ("sk-",),
    ),
    _rule(
        "stripe_key",
        _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{10,}",
        ("_live_", "_test_"),
        offset=2,
    ),
    _rule("stripe_webhook_secret", _B + r"whsec_[A-Za-z0-9]{20,}", ("whsec_",)),
    _rule(
        "aws_access_key_id",
        _B + r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _E,
        ("akia", "asia", "abia", "acca"),
    ),
    _rule(
        # A bare AWS secret access key: 40 base64 characters of mixed case and digits, only
        # looked for after AWS words (a git SHA is lowercase hex and never matches).
        "aws_secret_key",
        r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[A-Z])(?=[A-Za-z0-9/+]{0,39}[a-z])"
        r"(?=[A-Za-z0-9/+]{0,39}[0-9])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])",
        ("aws", "akia", "asia"),
        window=300,
    ),
    _rule(
        "github_token",
        _B + r"(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})",
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"),
    ),
    _rule(
        "gitlab_token",
        _B + r"gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|agent|soat)-[A-Za-z0-9_-]{20,}",
        (
            "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glft-", "glimt-", "glagent-",
            "glsoat-",
        ),
    ),
    _rule("slack_token", _B + r"xox[abposrec]-[A-Za-z0-9-]{10,}", ("xox",)),
    _rule("slack_app_token", _B + r"xapp-\d-[A-Za-z0-9-]{10,}", ("xapp-",)),
    _rule(
        "slack_webhook",
        r"https://hooks\.slack\.com/services/[A-Za-z0-9/_-]+",
        ("hooks.slack.com",),
        offset=8,
    ),
    _rule("google_api_key", _B + r"AIza[0-9A-Za-z_-]{35}", ("aiza",)),
    _rule("google_oauth_token", _B + r"ya29\.[0-9A-Za-z_-]{20,}", ("ya29.",)),
    _rule("huggingface_token", _B + r"hf_[A-Za-z0-9]{30,}", ("hf_",)),
    _rule("npm_token", _B + r"npm_[A-Za-z0-9]{36}", ("npm_",)),
    _rule("pypi_token", _B + r"pypi-[A-Za-z0-9_-]{50,}", ("pypi-",)),
    _rule("sendgrid_key", _B + r"SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}", ("sg.",)),
    _rule("digitalocean_token", _B + r"do[opr]_v1_[a-f0-9]{64}", ("_v1_",), offset=3),
    _rule(
        # Authorization header values; the digit lookahead spares prose ("Basic auth ...").
        "authorization",
        r"(?i)(?<![A-Za-z0-9])(?:bearer|basic|token)\s+(?P<secret>(?=[A-Za-z._~+/=-]*[0-9])"
        r"[A-Za-z0-9._~+/=-]{12,})",
        ("bearer", "basic", "token"),
        group=("secret",),
    ),
    _rule(
        # Anchored at the trigger: searching for the scheme's start backtracked over long
        # dotted runs (quadratic within each window); a scheme character before "://" is
        # enough to tell a URL, and each part stops at the next "/", "@" or space.
        "url_credentials",
        r"(?<=[a-zA-Z0-9+.-])://(?P<secret>(?!\[REDACTED)[^\s/@:]*:[^\s/@]+)@",
        ("://",),
        group=("secret",),
    ),
    _rule(
        # .env lines and assignments: DB_PASSWORD=..., export GITHUB_TOKEN="...",
        # "password": "...", api_key: ..., aws_secret_access_key = ..., dbPassword: '...'
        "secret",
        r"(?i)(?:(?<![A-Za-z0-9])|(?<=[_.-])|(?-i:(?<=[a-z])(?=[A-Z])))"
        + _SECRET_NAME
        + r"[\"']?\s*(?::=|=>|[=:])\s*"
        r"(?:(?P<q>[\"'`])(?!\[REDACTED)(?P<quoted>[^\"'`\n]{1,500})(?P=q)"
        r"|(?!(?:" + _CODE_WORDS + r")\b)(?!\[REDACTED|\[TRUNCATED\])"
        r"(?P<bare>[^\s\"'`,;)}\]]{3,500}))",
        ("pass", "pwd", "secret", "token", "auth", "credential", "dsn", "conn", *_KEY_NAMES),
        group=("quoted", "bare"),
    ),
)  # fmt: skip
"""Every rule; where two matches overlap, they are redacted as one span."""

_TRIGGERS: tuple[str, ...] = tuple(sorted({t for rule in RULES for t in rule.triggers}))
_RULES_BY_TRIGGER: tuple[tuple[int, ...], ...] = tuple(
    tuple(i for i, rule in enumerate(RULES) if trigger in rule.triggers) for trigger in _TRIGGERS
)
_AUTOMATON = ahocorasick_rs.AhoCorasick(list(_TRIGGERS))
_ASCII_AUTOMATON = ahocorasick_rs.BytesAhoCorasick([t.encode() for t in _TRIGGERS])
"""For ASCII text (most chat), byte offsets are character offsets and bytes search faster."""


def _spans(rule: Rule, text: str, positions: list[int]) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    size = len(text)
    if rule.window is None and rule.offset == 0 and len(positions) * DENSE_TRIGGER_CHARS > size:
        return _scanned_spans(rule, text)
    searched_to = -1
    matched_to = -1
    for pos in sorted(positions):
        start = max(0, pos - rule.offset)
        if rule.window is None:
            if start < matched_to:
                # Inside this rule's previous match: already redacted. Skipping keeps the
                # cost linear (200k of "-----BEGIN PRIVATE KEY-----" without an END
                # line was quadratic: every header matched to the end of the text).
                continue
            match = rule.pattern.match(text, start)
            matches = [match] if match is not None else []
            if match is not None:
                matched_to = match.end()
        else:
            if start < searched_to:
                start = searched_to
            end = size if rule.window < 0 else min(size, start + rule.window)
            if start >= end:
                continue
            # A match starts in the window but may end past it: the search reads a window
            # further, so a pattern's closing lookahead sees the real next character, not
            # the window's edge (a window ending inside a longer run redacted the run's
            # 40-character prefix, and a key starting near the edge was missed).
            reach = size if rule.window < 0 else min(size, end + rule.window)
            matches = [m for m in rule.pattern.finditer(text, start, reach) if m.start() < end]
            searched_to = end
        for match in matches:
            if rule.group:
                name = next((g for g in rule.group if match.group(g) is not None), None)
                if name is not None:
                    found.append((match.start(name), match.end(name), rule.kind))
            else:
                found.append((match.start(), match.end(), rule.kind))
    return found


_LENGTH_KEEPING = {0x130: "i"}
"""Characters whose lowercase form is longer (U+0130 "İ" becomes "i" plus a combining dot):
lowercased as "i", so the lowercase copy keeps every position of the text. The rules then
run in windows around their triggers on all text, ASCII or not: searching whole texts
for non-ASCII text backtracked quadratically (issue 26: 18.6 s at 100k characters).
``tests/unit/test_redaction_linear.py`` checks the table against this Python's Unicode."""


def _lowercase(text: str) -> str:
    """``text.lower()`` with the same length and positions as ``text``."""
    if not text.isascii() and "\u0130" in text:
        text = text.replace("\u0130", _LENGTH_KEEPING[0x130])
    return text.lower()


DENSE_TRIGGER_CHARS = 64
"""A rule with a trigger every this many characters or more often is matched by one scan
of the text instead of one call per trigger (the same matches: a rule's pattern can only
start at its trigger; one C-level scan costs less than tens of thousands of calls)."""


def _scanned_spans(rule: Rule, text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    for match in rule.pattern.finditer(text):
        name = next((g for g in rule.group if match.group(g) is not None), None)
        if not rule.group:
            found.append((match.start(), match.end(), rule.kind))
        elif name is not None:
            found.append((match.start(name), match.end(name), rule.kind))
    return found


def find_secrets(text: str) -> list[tuple[int, int, str]]:
    """Spans ``(start, end, kind)`` of the secrets in ``text``, sorted, not merged."""
    low = _lowercase(text)
    if low.isascii():
        hits = _ASCII_AUTOMATON.find_matches_as_indexes(low.encode("ascii"), overlapping=True)
    else:
        hits = _AUTOMATON.find_matches_as_indexes(low, overlapping=True)
    if not hits:
        return []
    positions: dict[int, list[int]] = {}
    for trigger_index, start, _end in hits:
        for rule_index in _RULES_BY_TRIGGER[trigger_index]:
            positions.setdefault(rule_index, []).append(start)
    spans: list[tuple[int, int, str]] = []
    for rule_index, starts in positions.items():
        spans.extend(_spans(RULES[rule_index], text, starts))
    spans.sort()
    return spans


def redact(text: str) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``; idempotent.

    Costs a few microseconds per kilobyte of text without secrets.
    """
    if not text:
        return text
    spans = find_secrets(text)
    if not spans:
        return text
    out: list[str] = []
    cursor = 0
    pending_start, pending_end, pending_kind = spans[0]
    for start, end, kind in spans[1:]:
        if start < pending_end:  # overlapping matches become one redaction
            pending_end = max(pending_end, end)
            continue
        out.append(text[cursor:pending_start])
        out.append(PLACEHOLDER.format(kind=pending_kind))
        cursor = pending_end
        pending_start, pending_end, pending_kind = start, end, kind
    out.append(text[cursor:pending_start])
    out.append(PLACEHOLDER.format(kind=pending_kind))
    out.append(text[pending_end:])
    return "".join(out)


def contains_secret(text: str) -> bool:
    """True when :func:`redact` would change ``text``."""
    return redact(text) != text


def looks_secret(text: str) -> bool:
    """A secret is in ``text``, or was redacted out of it (it carries a placeholder): what
    must never be promoted into a longer-lived memory."""
    return PLACEHOLDER.split("{", 1)[0] in text or contains_secret(text)


TRUNCATED_MARKER = " [TRUNCATED]"
"""Ends a field that redaction would have pushed past its length limit (placeholders can
be longer than the secrets they replace): the turn stays valid, and is counted."""


def fit(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters ending with the truncation marker, if longer.

    A placeholder cut in half is dropped whole, so the marker never follows ``[REDAC``.
    """
    if len(text) <= limit:
        return text
    kept = text[: max(0, limit - len(TRUNCATED_MARKER))]
    opening = kept.rfind("[", max(0, len(kept) - 40))
    if opening >= 0 and "]" not in kept[opening:]:
        tail = kept[opening:]
        if tail.startswith("[REDACTED:") or "[REDACTED:".startswith(tail):
            kept = kept[:opening]
    return (kept + TRUNCATED_MARKER)[:limit]


HASHED_ID_PREFIX = "h_"
"""Starts an event id that replaced one looking like a secret (then 32 hex digits)."""


def secret_free_id(event_id: str) -> str:
    """``event_id``, or its SHA-256 (``h_`` + 32 hex digits) when it looks like a secret.

    An id travels everywhere a turn goes: Redis keys, the change stream, graph nodes,
    exports, logs (issue 26: ``AKIA…``, ``ghp_…``, ``sk-…`` ids were stored verbatim). The
    hash is stable, so a resent turn keeps its id and stays one turn."""
    if not event_id or not contains_secret(event_id):
        return event_id
    return HASHED_ID_PREFIX + hashlib.sha256(event_id.encode()).hexdigest()[:32]


@dataclass(frozen=True)
class RedactedEvent:
    """The redacted event, the names of the fields cut to fit their limits, and whether
    its id was replaced by its hash."""

    event: TurnEvent
    truncated: tuple[str, ...] = ()
    id_hashed: bool = False


def _clean(text: str, limit: int, name: str, truncated: list[str]) -> str:
    redacted = redact(text)
    fitted = fit(redacted, limit)
    if fitted is not redacted:
        truncated.append(name)
    return fitted


def redact_and_fit(event: TurnEvent) -> RedactedEvent:
    """``event`` with every free-text field redacted: content, speaker, tags, reference
    values, client name and version, git branch and repository (scope keys are hashes
    already), and an event id that looks like a secret replaced by its hash. A field that
    redaction pushed past its limit is truncated with :data:`TRUNCATED_MARKER`, so a valid
    event stays valid."""
    cut: list[str] = []
    update: dict[str, object] = {}
    event_id = secret_free_id(event.event_id)
    if event_id != event.event_id:
        update["event_id"] = event_id
    content = _clean(event.content, MAX_CONTENT_CHARS, "content", cut)
    if content != event.content:
        update["content"] = content
    if event.speaker:
        speaker = _clean(event.speaker, MAX_SPEAKER_CHARS, "speaker", cut)
        if speaker != event.speaker:
            update["speaker"] = speaker
    if event.tags:
        tags = tuple(_clean(tag, MAX_TAG_CHARS, "tags", cut) for tag in event.tags)
        if tags != event.tags:
            update["tags"] = tags
    if event.references:
        refs = tuple(
            Reference(kind=r.kind, value=_clean(r.value, MAX_REFERENCE_CHARS, "references", cut))
            for r in event.references
        )
        if refs != event.references:
            update["references"] = refs
    name = _clean(event.client.name, MAX_CLIENT_NAME_CHARS, "client.name", cut)
    version = _clean(event.client.version, MAX_CLIENT_VERSION_CHARS, "client.version", cut)
    if name != event.client.name or version != event.client.version:
        update["client"] = ClientInfo(name=name, version=version)
    git = event.git
    if git is not None and (git.branch or git.repository):
        branch = git.branch and _clean(git.branch, MAX_GIT_BRANCH_CHARS, "git.branch", cut)
        repository = git.repository and _clean(
            git.repository, MAX_GIT_REPOSITORY_CHARS, "git.repository", cut
        )
        if branch != git.branch or repository != git.repository:
            update["git"] = git.model_copy(update={"branch": branch, "repository": repository})
    redacted = event.model_copy(update=update) if update else event
    return RedactedEvent(redacted, tuple(dict.fromkeys(cut)), "event_id" in update)


def redact_event(event: TurnEvent) -> TurnEvent:
    """A copy of ``event`` with every free-text field redacted (see :func:`redact_and_fit`)."""
    return redact_and_fit(event).event
