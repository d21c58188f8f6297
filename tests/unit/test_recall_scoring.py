from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.recall import NOW
from turngraph.workers.recall.ranking import DEFAULT
from turngraph.workers.recall.scoring import (
    Deduplicator,
    Scored,
    _signature,
    fuse,
    is_visible,
    merge_provenance,
    normalise,
    pack,
    rank_key,
    recency_multiplier,
    recency_of,
    rrf_fuse,
    status_multiplier,
)
from turngraph.workers.recall.text import estimate_tokens
from turngraph.workers.recall.timeq import TimeIntent, TimeMode


def _item(key: int, text: str, final: float = 1.0, tokens: int = 10, **kw: object) -> Scored:
    return Scored(
        key=key,
        text=text,
        final=final,
        is_decision_record=bool(kw.get("decision", False)),
        tokens=tokens,
        source_event_ids=(f"e{key}",),
    )


@pytest.mark.parametrize(
    ("age_days", "half_life", "expected"),
    [(0, 14, 1.0), (14, 14, 0.5), (28, 14, 0.25), (1, 0.5, 0.25), (90, 90, 0.5)],
)
def test_recency_halves_every_half_life(age_days: float, half_life: float, expected: float) -> None:
    reference = NOW - timedelta(days=age_days)
    assert recency_multiplier(reference, NOW, half_life) == pytest.approx(expected)


def test_a_future_timestamp_does_not_boost() -> None:
    assert recency_multiplier(NOW + timedelta(days=3), NOW, 7) == 1.0


def test_status_multipliers_and_visibility() -> None:
    assert status_multiplier("DecisionRecord") == 1.1
    assert status_multiplier("Active") == 1.0
    assert status_multiplier("Superseded") == 0.4
    assert status_multiplier("Draft") == 1.0
    assert not is_visible("Superseded", include_superseded=False)
    assert is_visible("Superseded", include_superseded=True)
    assert is_visible("Active", include_superseded=False)


def test_rrf_rewards_agreement_between_lists_and_normalises() -> None:
    fused = rrf_fuse({"lexical": ["a", "b", "c"], "graph": ["b", "d"]}, DEFAULT)
    assert max(fused.values()) == 1.0
    assert max(fused, key=fused.__getitem__) == "b"
    assert fused["a"] > fused["c"]


def test_score_fusion_keeps_the_contrast_between_strong_and_weak() -> None:
    fused = fuse({"lexical": {"strong": 10.0, "weak": 1.0}, "graph": {}}, DEFAULT)
    assert fused["strong"] == 1.0
    assert fused["weak"] == pytest.approx(0.1)


def test_fusion_adds_signals() -> None:
    fused = fuse({"lexical": {"a": 1.0, "b": 1.0}, "graph": {"b": 1.0}}, DEFAULT)
    assert fused["b"] == 1.0 and fused["a"] < 1.0


def deduplicate(items: list[Scored]) -> list[Scored]:
    """The near-duplicates of better-ranked items dropped, their provenance merged."""
    dedup = Deduplicator()
    for item in items:
        winner = dedup.duplicate_of(item)
        if winner is None:
            dedup.keep(item)
        else:
            merge_provenance(winner, item)
    return dedup.kept


def test_deduplicate_merges_provenance_into_the_better_item() -> None:
    items = [
        _item(1, "We decided to retry webhooks with backoff, at most 5 attempts."),
        _item(2, "we decided to retry webhooks with backoff at most 5 attempts"),
        _item(3, "Something else entirely"),
    ]
    kept = deduplicate(items)
    assert [i.key for i in kept] == [1, 3]
    assert kept[0].source_event_ids == ("e1", "e2")


def test_pack_stops_at_max_results() -> None:
    items = [_item(n, f"text number {n} unique{n}") for n in range(10)]
    assert len(pack(items, max_results=3, max_tokens=10_000)) == 3


def test_pack_skips_what_does_not_fit_and_keeps_smaller_ones() -> None:
    items = [
        _item(1, "a first item", tokens=60),
        _item(2, "a long second item", tokens=80),
        _item(3, "a small third item", tokens=30),
    ]
    chosen = pack(items, max_results=10, max_tokens=100)
    assert [i.key for i in chosen] == [1, 3]
    assert sum(i.tokens for i in chosen) <= 100


def test_pack_truncates_to_the_remaining_budget() -> None:
    text = " ".join(f"word{n}" for n in range(400))
    items = [_item(1, text, tokens=estimate_tokens(text))]

    def cut(value: str, budget: int) -> str:
        return " ".join(value.split()[: budget // 3])

    chosen = pack(items, max_results=5, max_tokens=120, truncate=cut, estimate=estimate_tokens)
    assert len(chosen) == 1
    assert chosen[0].tokens <= 120 and chosen[0].text != text


def test_pack_drops_near_duplicates() -> None:
    items = [_item(1, "same words here"), _item(2, "same words here"), _item(3, "other")]
    chosen = pack(items, max_results=5, max_tokens=1_000)
    assert [i.key for i in chosen] == [1, 3]
    assert chosen[0].source_event_ids == ("e1", "e2")


def test_ties_go_to_decision_records() -> None:
    plain, decision = _item(1, "x", final=0.5), _item(2, "y", final=0.5, decision=True)
    assert sorted([plain, decision], key=rank_key, reverse=True)[0] is decision


def test_a_packed_text_is_not_split_into_words_again() -> None:
    """The de-duplication's word set of a text a replica packs again is kept."""
    text = "The ledger keeps integer cents, never floats, for exact sums."
    first = _signature(text)
    misses = _signature.cache_info().misses
    assert (
        _signature(text)
        == first
        == frozenset(
            [
                "the",
                "ledger",
                "keeps",
                "integer",
                "cents",
                "never",
                "floats",
                "for",
                "exact",
                "sums",
            ]
        )
    )
    assert _signature.cache_info().misses == misses


def _normalise_reference(
    scores: dict[int, float], over: Callable[[int], bool] | None
) -> dict[int, float]:
    """``normalise`` as it was: ``over`` asked about every key."""
    values = scores.values() if over is None else [v for k, v in scores.items() if over(k)]
    top = max(values, default=0.0)
    if top <= 0 and over is not None:
        top = max(scores.values(), default=0.0)
    return {k: v / top for k, v in scores.items()} if top > 0 else dict(scores)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.integers(0, 40),
        st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0]) | st.floats(0, 10),
        max_size=30,
    ),
    st.sets(st.integers(0, 40)),
    st.booleans(),
)
def test_normalise_asks_over_about_the_best_key_only_and_gives_the_same_scores(
    scores: dict[int, float], restated: set[int], filtered: bool
) -> None:
    asked: list[int] = []

    def said(key: int) -> bool:
        asked.append(key)
        return key not in restated

    over = said if filtered else None
    expected = _normalise_reference(scores, (lambda k: k not in restated) if filtered else None)
    assert normalise(scores, over) == expected  # the same floats, to the last bit
    if filtered and scores and asked[0] not in restated:
        assert len(asked) == 1  # a turn leads: no call per key


def test_recency_of_gives_time_multiplier_for_every_intent() -> None:
    moments = [NOW - timedelta(days=d) for d in (0, 0.5, 3, 14, 200)] + [NOW + timedelta(days=1)]
    intents = [
        TimeIntent(mode, "q", NOW - timedelta(days=5), NOW - timedelta(days=1)) for mode in TimeMode
    ]
    for intent in intents:
        for half_life in (0.5, 14.0, 90.0):
            at = recency_of(intent, NOW, half_life, DEFAULT)
            for moment in moments:
                floor = (
                    DEFAULT.latest_floor
                    if intent.mode is TimeMode.LATEST
                    else DEFAULT.recency_floor
                )
                expected = {
                    TimeMode.NEUTRAL: 1.0,
                    TimeMode.WINDOW: 1.0 if intent.contains(moment) else DEFAULT.outside_window,
                }.get(
                    intent.mode, floor + (1.0 - floor) * recency_multiplier(moment, NOW, half_life)
                )
                assert at(moment) == expected


def test_texts_in_other_scripts_are_not_duplicates_of_each_other() -> None:
    """Word sets are made in any script: two different Russian (or Chinese) texts were
    both an empty word set, so the second was dropped as a "duplicate" of the first."""
    items = [
        _item(1, "Мы выбрали Postgres для заказов."),
        _item(2, "Тесты пишем на pytest, без моков."),
        _item(3, "我们决定用红色的按钮。"),
        _item(4, "用户喜欢简短的回答。"),
        _item(5, "👍"),
        _item(6, "🎉"),
        _item(7, "👍"),
    ]
    assert [i.key for i in deduplicate(items)] == [1, 2, 3, 4, 5, 6]
    assert [i.key for i in deduplicate([_item(1, "Größe"), _item(2, "grosse")])] == [1]
