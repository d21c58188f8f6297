"""Adversarial text families for redaction: each builds a text of about ``n`` characters
shaped to make a backtracking or trigger-per-position redactor slow (issue 26 found one
quadratic family, a non-ASCII character before a long dotted run, and two slow ones).
Shared by ``bench.redaction`` (time per 100k characters) and the property test."""

from __future__ import annotations

from collections.abc import Callable


def _repeat(unit: str, n: int) -> str:
    return unit * max(1, n // len(unit))


FAMILIES: dict[str, Callable[[int], str]] = {
    "non_ascii_dotted_url": lambda n: "İ " + _repeat("a.", n - 6) + "://x",
    "ascii_dotted_url": lambda n: _repeat("a.", n - 4) + "://x",
    "dotted_runs_many_schemes": lambda n: _repeat("a." * 50 + "://", n),
    "non_ascii_dotted_many_schemes": lambda n: "é" + _repeat("a." * 50 + "://", n - 1),
    "userinfo_without_at": lambda n: _repeat("x://" + "a:" * 48, n),
    "colon_runs": lambda n: _repeat("a://" + ":" * 96, n),
    "scheme_words": lambda n: _repeat("a" * 397 + "://", n),
    "secret_assignments": lambda n: _repeat('password="' + "x" * 90, n),
    "non_ascii_assignments": lambda n: "İ" + _repeat("password: " + "é" * 90, n - 1),
    "trigger_words": lambda n: _repeat("token ", n),
    "non_ascii_trigger_words": lambda n: "İ" + _repeat("token ", n - 1),
    "private_key_headers": lambda n: _repeat("-----BEGIN PRIVATE KEY-----", n),
    "bearer_runs": lambda n: _repeat("bearer " + "a" * 93, n),
    "aws_words": lambda n: _repeat("aws " + "A1a/" * 24, n),
    "dotted_i_everywhere": lambda n: _repeat("İa://", n),
}
"""Family name -> builder of a text of about ``n`` characters."""
