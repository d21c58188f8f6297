"""Redaction keeps a valid turn valid (truncation with a marker, counted) in linear time."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.turns import turn
from turngraph.producers.redaction import (
    RULES,
    TRUNCATED_MARKER,
    contains_secret,
    fit,
    redact,
    redact_and_fit,
)
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
    GitInfo,
    Reference,
    TurnEvent,
)

GROWS = "pwd=abc "
"""A secret shorter than its placeholder: redaction makes the text longer."""

N = 200_000


def _worst_inputs() -> dict[str, str]:
    """Texts built to make a backtracking or trigger-per-position redactor quadratic."""
    cases = {
        "private_key_without_end": "-----BEGIN PRIVATE KEY-----" * (N // 27),
        "private_key_lines_without_end": "-----BEGIN RSA PRIVATE KEY-----\n" * (N // 32),
        "url_schemes": ("a" * 397 + "://") * (N // 400),
        "url_userinfo": "a://b:c" * (N // 7),
        "aws_words": ("aws " + "Ab1/" * 99) * (N // 400),
        "assignments": ('password="' + "x" * 600) * (N // 610),
        "bearer": ("bearer " + "a" * 50) * (N // 57),
        "github_pat": "github_pat_" * (N // 11),
        "growing": GROWS * (N // len(GROWS)),
    }
    for rule in RULES:
        for trigger in rule.triggers:
            cases[f"{rule.kind}:{trigger}"] = (trigger + " ") * (N // (len(trigger) + 1))
            cases[f"{rule.kind}:{trigger}:dense"] = trigger * (N // len(trigger))
    cases.update({f"non_ascii:{k}": "İ" + v[: N - 1] for k, v in list(cases.items())[:9]})
    return cases


WORST = _worst_inputs()


@pytest.mark.parametrize("name", sorted(WORST))
def test_redaction_is_linear_on_the_worst_inputs(name: str) -> None:
    text = WORST[name]
    assert len(text) <= N + 1
    started = time.thread_time()
    out = redact(text)
    took = time.thread_time() - started
    # Linear: ~0.1 s of CPU at most here on 200k characters; quadratic was 37 s for the
    # first case. This thread's CPU time, not wall time: a loaded CI box once stalled a
    # 0.02 s case for 2.6 s of wall time.
    assert took < 2.0, f"{name}: {took:.2f} s of CPU"
    assert redact(out) == out


def test_a_private_key_without_end_line_is_redacted_to_the_end() -> None:
    text = "see " + WORST["private_key_without_end"]
    assert redact(text) == "see [REDACTED:private_key]"


def test_content_pushed_past_its_limit_is_truncated_with_a_marker_and_counted() -> None:
    event = turn((GROWS * (MAX_CONTENT_CHARS // len(GROWS)))[:MAX_CONTENT_CHARS])
    result = redact_and_fit(event)
    assert result.truncated == ("content",)
    content = result.event.content
    assert len(content) <= MAX_CONTENT_CHARS and content.endswith(TRUNCATED_MARKER)
    assert not contains_secret(content)
    assert "[REDAC" not in content[-len(TRUNCATED_MARKER) - 20 :].rsplit("]", 1)[-1]
    TurnEvent.model_validate_json(result.event.model_dump_json())  # still valid


def test_fit_never_leaves_half_a_placeholder() -> None:
    text = "x" * 90 + "[REDACTED:openai_key]" + "y" * 50
    for limit in range(len(TRUNCATED_MARKER), len(text) + 1):
        out = fit(text, limit)
        assert len(out) <= limit
        tail = out.removesuffix(TRUNCATED_MARKER)
        assert tail == text or "[REDACTED:openai_key]" in tail or "[" not in tail


def test_every_free_text_field_stays_within_its_limit() -> None:
    def grown(limit: int) -> str:
        return (GROWS * (limit // len(GROWS) + 1))[:limit]

    event = turn("hello").model_copy(
        update={
            "speaker": grown(MAX_SPEAKER_CHARS),
            "tags": (grown(MAX_TAG_CHARS),),
            "references": (Reference(kind="other", value=grown(MAX_REFERENCE_CHARS)),),
            "client": ClientInfo(
                name=grown(MAX_CLIENT_NAME_CHARS), version=grown(MAX_CLIENT_VERSION_CHARS)
            ),
            "git": GitInfo(
                branch=grown(MAX_GIT_BRANCH_CHARS), repository=grown(MAX_GIT_REPOSITORY_CHARS)
            ),
        }
    )
    result = redact_and_fit(event)
    assert set(result.truncated) == {
        "speaker",
        "tags",
        "references",
        "client.name",
        "client.version",
        "git.branch",
        "git.repository",
    }
    TurnEvent.model_validate_json(result.event.model_dump_json())


SECRETISH = st.sampled_from(
    [
        GROWS,
        "ghp_" + "A1b2C3d4" * 5,
        "AKIAIOSFODNN7EXAMPLE ",
        "-----BEGIN PRIVATE KEY-----",
        "postgres://u:p4ss@h/db ",
        "token=abc ",
        "İ",
        "\x00",
        " ",
        "x",
    ]
)


def _text(max_chars: int, min_size: int = 0) -> st.SearchStrategy[str]:
    return (
        st.lists(SECRETISH | st.text(max_size=8), min_size=min_size, max_size=max_chars)
        .map("".join)
        .map(lambda s: s[:max_chars])
        .filter(lambda s: len(s) >= min_size)
    )


@settings(max_examples=150, deadline=None)
@given(
    content=_text(400, min_size=1).filter(str.strip),  # blank content is not a turn
    speaker=_text(MAX_SPEAKER_CHARS),
    tag=_text(MAX_TAG_CHARS),
    ref=_text(MAX_REFERENCE_CHARS, min_size=1),
    name=_text(MAX_CLIENT_NAME_CHARS, min_size=1),
    version=_text(MAX_CLIENT_VERSION_CHARS),
    branch=_text(MAX_GIT_BRANCH_CHARS),
)
def test_redaction_never_makes_a_valid_turn_invalid(
    content: str, speaker: str, tag: str, ref: str, name: str, version: str, branch: str
) -> None:
    event = turn(content).model_copy(
        update={
            "speaker": speaker,
            "tags": (tag,),
            "references": (Reference(kind="file", value=ref),),
            "client": ClientInfo(name=name, version=version),
            "git": GitInfo(branch=branch or None, repository=branch or None),
        }
    )
    TurnEvent.model_validate_json(event.model_dump_json())
    result = redact_and_fit(event)
    again = TurnEvent.model_validate_json(result.event.model_dump_json())
    # the worker redacts again: still valid (and, but for a cut word, unchanged)
    TurnEvent.model_validate_json(redact_and_fit(again).event.model_dump_json())
