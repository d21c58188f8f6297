"""Redaction: a corpus of realistic secrets in turns, benign text left alone, idempotence."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.turn_factory import make_turn
from turngraph.producers.redaction import contains_secret, redact, redact_event
from turngraph.schemas.turn_event import ClientInfo, GitInfo, Reference

CORPUS_PATH = Path(__file__).parents[1] / "data" / "secrets_corpus.jsonl"
CORPUS = [json.loads(line) for line in CORPUS_PATH.read_text().splitlines()]

BENIGN = [
    "Set max_tokens=1000 and temperature: 0.2 in the request",
    "commit 3f2a9c1b7e4d5a6b8c9d0e1f2a3b4c5d6e7f8a9b fixed the race",
    "def login(username: str, password: str) -> Token:",
    "token = None  # filled later",
    "password = os.environ['DB_PASSWORD']",
    "Basic authentication is fine for the internal API",
    "We use Bearer authentication with short-lived tokens",
    "See https://github.com/acme/infra/pull/42 and https://docs.python.org/3/",
    "The task is to ask the SK team about the Asia region rollout",
    "uuid 123e4567-e89b-12d3-a456-426614174000 is the session",
    "primary_key: true, foreign_key: user_id",
    "the tokenizer splits tokens into subwords; token_count is 12",
    "decision: use MERGE on Episode.event_id; see producers/bounded_queue.py",
    "const apiKey = process.env.OPENAI_API_KEY;",
    "auth: true",
    "bypass: yes and passenger: bob",
    "The key insight is that the queue is bounded",
    "Use the secret manager, never hard-code it",
    "AWS region eu-west-1, see src/components/ServerSideRenderer.tsx",
    "Ünïcode İstanbul text with a key word: nothing secret here",
]


def _windows(secret: str, width: int = 10) -> list[str]:
    width = min(width, len(secret))
    return [secret[i : i + width] for i in range(len(secret) - width + 1)]


def test_corpus_is_large_and_varied() -> None:
    assert len(CORPUS) >= 100
    assert len({row["kind"] for row in CORPUS}) >= 20
    assert all(row["secret"] in row["content"] for row in CORPUS)


@pytest.mark.parametrize("row", CORPUS, ids=lambda row: row["kind"])
def test_no_part_of_a_secret_survives(row: dict[str, str]) -> None:
    out = redact(row["content"])
    assert "[REDACTED:" in out
    leaked = [part for part in _windows(row["secret"]) if part in out]
    assert leaked == []


@pytest.mark.parametrize("row", CORPUS[::7], ids=lambda row: row["kind"])
def test_redaction_is_idempotent(row: dict[str, str]) -> None:
    once = redact(row["content"])
    assert redact(once) == once
    assert not contains_secret(once)


@pytest.mark.parametrize("text", BENIGN)
def test_benign_text_is_left_alone(text: str) -> None:
    assert redact(text) == text


def test_key_names_stay_readable() -> None:
    assert redact("DB_PASSWORD=hunter2hunter2") == "DB_PASSWORD=[REDACTED:secret]"
    assert redact('{"password": "s3cr3t!x"}') == '{"password": "[REDACTED:secret]"}'
    assert (
        redact("postgres://app:pw12345@db:5432/x")
        == "postgres://[REDACTED:url_credentials]@db:5432/x"
    )


def test_non_ascii_text_takes_the_slow_path_and_still_redacts() -> None:
    secret = "ghp_" + "A1b2C3d4" * 5
    text = "İİİ token is " + secret  # İ lowercases to two characters
    assert secret not in redact(text)


def test_redact_event_covers_every_free_text_field() -> None:
    secret = "sk-proj-" + "Zx9" * 20
    event = make_turn(0, content=f"key {secret}").model_copy(
        update={
            "speaker": f"bot {secret}",
            "tags": (f"t {secret}",),
            "references": (Reference(kind="url", value=f"https://x.dev/?k={secret}"),),
            "git": GitInfo(branch=f"fix/{secret}", repository=f"https://x:{secret}@h/r.git"),
            "client": ClientInfo(name=f"ed {secret}"[:100], version="AKIAIOSFODNN7EXAMPLE"),
        }
    )
    dumped = redact_event(event).model_dump_json()
    assert secret not in dumped and secret[:20] not in dumped
    assert "AKIAIOSFODNN7EXAMPLE" not in dumped
    clean = make_turn(1)
    assert redact_event(clean) is clean


@given(st.text(max_size=400))
def test_redact_never_raises_and_is_idempotent_on_any_text(text: str) -> None:
    once = redact(text)
    assert redact(once) == once


def test_a_search_window_edge_neither_makes_nor_hides_a_bare_aws_key() -> None:
    # A bare AWS secret key is looked for within a window after an AWS word. A window
    # ending inside a longer base64 run once redacted the run's 40-character prefix (found
    # by test_redaction_adversarial: redaction was then not idempotent), and a key that
    # started near the window's end was missed.
    run_across_the_edge = "aws" + " " * 257 + "A1a/" * 20
    assert redact(run_across_the_edge) == run_across_the_edge
    key = "Ab1/" * 10
    key_across_the_edge = "aws" + " " * 287 + key + " end"
    assert redact(key_across_the_edge) == "aws" + " " * 287 + "[REDACTED:aws_secret_key] end"
