"""Redaction on the adversarial families of ``bench/redaction_families.py`` (timed in
``bench.redaction``): a secret planted anywhere in them is redacted, redaction is
idempotent, and a non-ASCII character in front changes nothing else (issue 26: the
non-ASCII path searched whole texts and backtracked quadratically)."""

from __future__ import annotations

import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from bench.redaction_families import FAMILIES
from turngraph.producers.redaction import _LENGTH_KEEPING, redact

SECRETS = (
    "postgres://app:pw12345@db:5432/x",
    "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "AKIAABCDEFGHIJKLMNOP",
    "sk-ant-" + "a1B2c3D4e5F6g7H8i9J0k1L2",
    "xoxb-1234567890-abcdefghij",
)
"""Planted secrets and the part of each that must not survive."""

_MUST_GO = {
    SECRETS[0]: "app:pw12345",
    SECRETS[1]: SECRETS[1],
    SECRETS[2]: SECRETS[2],
    SECRETS[3]: SECRETS[3],
    SECRETS[4]: SECRETS[4],
}


@settings(max_examples=150, deadline=None)
@given(
    family=st.sampled_from(sorted(FAMILIES)),
    size=st.integers(min_value=50, max_value=4_000),
    secret=st.sampled_from(SECRETS),
    where=st.floats(min_value=0, max_value=1),
    prefix=st.sampled_from(["", "İ ", "é ", "日本 "]),
)
def test_a_secret_planted_in_an_adversarial_text_is_redacted(
    family: str, size: int, secret: str, where: float, prefix: str
) -> None:
    text = FAMILIES[family](size)
    cut = int(len(text) * where)
    planted = f"{text[:cut]} {secret} {text[cut:]}"
    out = redact(prefix + planted)
    assert _MUST_GO[secret] not in out
    assert redact(out) == out
    assert out == prefix + redact(planted)


@settings(max_examples=60, deadline=None)
@given(family=st.sampled_from(sorted(FAMILIES)), size=st.integers(min_value=1, max_value=3_000))
def test_redaction_of_an_adversarial_text_is_idempotent(family: str, size: int) -> None:
    out = redact(FAMILIES[family](size))
    assert redact(out) == out


def test_the_length_keeping_table_covers_this_pythons_unicode() -> None:
    """Every character whose lowercase form is not one character is mapped, so trigger
    positions in the lowercase copy are positions in the text."""
    longer = {
        code
        for code in range(sys.maxunicode + 1)
        if not 0xD800 <= code < 0xE000 and len(chr(code).lower()) != 1
    }
    assert longer == set(_LENGTH_KEEPING)
