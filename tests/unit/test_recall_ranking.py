"""The ranking is one frozen value: presets, typed overrides, and the index that uses it."""

from __future__ import annotations

import dataclasses

import pytest
from pydantic import ValidationError

from tests.support.recall import NOW, memory, request
from turngraph.schemas.errors import ConfigurationError
from turngraph.settings import Settings
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import (
    DEFAULT,
    PRESETS,
    RANK_FUSION,
    Ranking,
    RankingValueError,
    preset,
)
from turngraph.workers.recall.search import search


def test_a_ranking_cannot_be_changed_in_place() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.bm25_b = 0.75  # type: ignore[misc]


def test_overrides_make_a_copy_and_keep_each_settings_type() -> None:
    tuned = Ranking.parse("bm25_b=0.75, postings_budget=9000,chain_weight=0")
    assert (tuned.bm25_b, tuned.postings_budget, tuned.chain_weight) == (0.75, 9000, 0.0)
    assert isinstance(tuned.postings_budget, int)
    assert DEFAULT.bm25_b == 0.3 and DEFAULT.postings_budget == 3_000
    assert Ranking.parse("", RANK_FUSION) == RANK_FUSION


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("bm25_c=1", "no ranking setting 'bm25_c'"),
        ("bm25_b", "expected name=number"),
        ("bm25_b=high", "expected name=number"),
        ("postings_budget=2.5", "takes a whole number"),
    ],
)
def test_a_bad_override_says_what_to_change(text: str, says: str) -> None:
    with pytest.raises(RankingValueError, match=says) as caught:
        Ranking.parse(text)
    assert isinstance(caught.value, ConfigurationError)


def test_presets_are_named_and_an_unknown_one_lists_them() -> None:
    assert preset("default") is DEFAULT
    assert preset("rank_fusion").fusion_score_share == 0.0
    with pytest.raises(RankingValueError, match="default, rank_fusion"):
        preset("fast")


def test_settings_choose_a_preset_by_name() -> None:
    assert Settings(_env_file=None).recall_ranking == "default"  # type: ignore[call-arg]
    chosen = Settings(_env_file=None, recall_ranking="rank_fusion")  # type: ignore[call-arg]
    assert PRESETS[chosen.recall_ranking] is RANK_FUSION
    with pytest.raises(ValidationError, match="expected one of default, rank_fusion"):
        Settings(_env_file=None, recall_ranking="fastest")  # type: ignore[call-arg]


def test_the_index_ranks_by_the_ranking_it_was_built_with() -> None:
    """BM25 ``b`` is applied when memories are added: with full length normalisation the
    short turn naming the term wins; without any, the long one that says it twice."""
    texts = {
        "short": "deploy window",
        "long": "the deploy went out late because the deploy script waited on a slow "
        "migration of the orders table and a review of the rollback plan",
    }
    first = {}
    for b in (0.0, 1.0):
        index = MemoryIndex(ranking=DEFAULT.with_values(bm25_b=b))
        for key, text in texts.items():
            index.add(memory(key, text))
        results = search(index, request("deploy"), NOW).results
        first[b] = results[0].memory_id
    assert first == {0.0: "long", 1.0: "short"}


def _knee_chat(ranking: Ranking) -> MemoryIndex:
    index = MemoryIndex(ranking=ranking)
    index.add(memory("said", "I hurt my knee running last spring", extra={"role": "user"}))
    index.add(
        memory(
            "reply",
            "A knee that hurt while running: ease back into running, strengthen the knee, "
            "and see a physio if the knee still hurts",
            extra={"role": "assistant"},
        )
    )
    return index


def test_a_question_about_the_user_is_answered_by_what_the_user_said() -> None:
    lifted = _knee_chat(DEFAULT.with_values(assistant_turn_multiplier=0.5))
    results = search(lifted, request("what should I do about my knee when running?"), NOW)
    assert [r.memory_id for r in results.results] == ["said", "reply"]
    assert results.results[1].score.role_multiplier == 0.5
    plain = _knee_chat(DEFAULT.with_values(assistant_turn_multiplier=1.0))
    first = search(plain, request("what should I do about my knee when running?"), NOW)
    assert first.results[0].memory_id == "reply"  # the long reply matches more words


def test_a_question_not_in_the_first_person_keeps_the_assistants_turns() -> None:
    index = _knee_chat(DEFAULT.with_values(assistant_turn_multiplier=0.5))
    results = search(index, request("what helps a knee that hurts when running?"), NOW).results
    assert results[0].memory_id == "reply"
    assert all(r.score.role_multiplier == 1.0 for r in results)
