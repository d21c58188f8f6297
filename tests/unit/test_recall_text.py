from __future__ import annotations

import pytest

from turngraph.workers.recall.text import entity_key, entity_ngrams, estimate_tokens, stem, tokenize


@pytest.mark.parametrize(
    "words",
    [
        ("retry", "retries", "retried", "retrying"),
        ("replace", "replaces", "replaced", "replacing"),
        ("page", "pages", "paging", "paged"),
        ("run", "running"),
    ],
)
def test_inflections_meet_at_one_stem(words: tuple[str, ...]) -> None:
    assert len({stem(w) for w in words}) == 1


def test_short_words_and_numbers_are_left_alone() -> None:
    assert stem("ids") == "ids" and stem("2026") == "2026"


def test_identifiers_yield_parts_and_the_whole() -> None:
    terms = tokenize("Fix payment_service.py and RetryPolicy")
    assert "payment_service.py" in terms and "retrypolicy" in terms
    assert {"payment", "servic", "py", "retry", "policy"} <= set(terms)
    assert "and" not in terms


def test_entity_keys_and_ngrams_agree() -> None:
    assert entity_key("Payments-API") == "payments api"
    assert entity_key("payments api") in entity_ngrams("is the Payments API down?")
    assert entity_ngrams("a b c", max_len=2) == ["a", "a b", "b", "b c", "c"]


def test_token_estimate_grows_with_text() -> None:
    assert 1 <= estimate_tokens("x") <= 2
    assert estimate_tokens("word " * 100) >= 100
    assert estimate_tokens("a" * 400) == 100  # one long word: the character rule wins
