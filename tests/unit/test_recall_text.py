from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from turngraph.workers.recall.text import (
    _WORD,
    entity_key,
    entity_ngrams,
    estimate_tokens,
    fold,
    stem,
    tokenize,
    words,
)

_ASCII_WORD_BEFORE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-/]*[A-Za-z0-9]|[A-Za-z0-9]")
"""The word pattern before words of other scripts counted: ASCII text must split alike."""


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


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80))
def test_ascii_text_splits_into_the_same_words_as_before(text: str) -> None:
    assert _WORD.findall(text) == _ASCII_WORD_BEFORE.findall(text)


def test_accents_and_case_fold_away() -> None:
    assert tokenize("Wir haben uns für die Größe entschieden") == tokenize(
        "wir haben uns fur die grosse entschieden"
    )
    assert tokenize("café naïve") == tokenize("cafe naive") == ["caf", "naiv"]
    assert fold("Crème Brûlée") == "creme brulee"


def test_words_of_other_scripts_are_terms() -> None:
    assert tokenize("Мы выбрали базу данных") == ["мы", "выбрали", "базу", "данных"]
    assert "αθήνα" not in tokenize("Αθήνα") and tokenize("Αθήνα") == tokenize("αθηνα")


def test_a_word_keeps_its_vowel_signs() -> None:
    """Indic vowel signs and viramas are marks, not letters: a word is not cut at them."""
    assert tokenize("नमस्ते दुनिया। मैंने पोस्टग्रेस चुना") == [
        "नमसते", "दुनिया", "मैंने", "पोसटगरेस", "चुना",
    ]  # fmt: skip
    assert entity_key("पोस्टग्रेस") in entity_ngrams("हमने पोस्टग्रेस चुना")


def test_cjk_text_is_indexed_as_character_pairs() -> None:
    assert tokenize("我们决定用PostgreSQL数据库") == [
        "我们", "们决", "决定", "定用", "postgresql", "postgr", "sql", "数据", "据库",
    ]  # fmt: skip
    assert tokenize("数据库") == tokenize("ﾃﾞｰﾀ数据库")[-2:]  # half-width kana folded too
    assert tokenize("ﾃﾞｰﾀ")[:1] == tokenize("データ")[:1] == ["デー"]  # voicing kept
    assert tokenize("선택했다") == ["선택", "택했", "했다"]
    assert tokenize("猫") == ["猫"]


def test_entity_keys_in_any_script() -> None:
    assert entity_key("Zoë Müller") == "zoe muller" == entity_key("zoe muller")
    assert entity_key("北京") in entity_ngrams("北京的天气怎么样")
    assert words("👍") == []
