"""The chaos bench's verdict can fail: each kind of duplicate and loss is counted."""

from __future__ import annotations

from collections import Counter

from bench.chaos_check import GraphCounts, mention_errors, verdict


def _counts(**episodes: int) -> GraphCounts:
    return GraphCounts(episodes=Counter(episodes), in_session=Counter(dict.fromkeys(episodes, 1)))


def test_a_clean_run_has_nothing_to_report() -> None:
    result = verdict(["a", "b"], _counts(a=1, b=1), {"a": 1, "b": 1}, set())
    assert (result.in_graph, result.lost, result.duplicated, result.unknown) == (2, 0, 0, 0)


def test_two_episode_nodes_for_one_event_are_a_duplicate() -> None:
    assert verdict(["a"], _counts(a=2), {"a": 1}, set()).duplicated == 1


def test_an_episode_created_twice_is_a_duplicate_even_with_one_node_left() -> None:
    result = verdict(["a"], _counts(a=1), {"a": 2}, set())
    assert (result.duplicated, result.written_twice) == (1, 1)


def test_a_second_in_session_link_is_a_duplicate() -> None:
    counts = _counts(a=1)
    counts.in_session["a"] = 2
    assert verdict(["a"], counts, {"a": 1}, set()).duplicated == 1


def test_missing_events_are_lost_and_those_redis_forgot_are_told_apart() -> None:
    result = verdict(["a", "b", "c"], _counts(a=1, z=1), {"a": 1}, {"b"})
    assert (result.lost, result.lost_by_redis, result.unknown) == (2, 1, 1)


def test_mention_counts_must_equal_distinct_mentioning_episodes() -> None:
    entities = [
        {"uid": "ok", "mentions": 2, "first_episode_id": "a"},
        {"uid": "bumped_twice", "mentions": 3, "first_episode_id": "a"},
        {"uid": "linked_twice", "mentions": 2, "first_episode_id": "a"},
        {"uid": "made_by_another", "mentions": 2, "first_episode_id": "c"},
        {"uid": "made_by_none", "mentions": 2, "first_episode_id": None},
    ]
    mentioned = {
        "ok": ["a", "b"],
        "bumped_twice": ["a", "b"],
        "linked_twice": ["a", "b", "b"],
        "made_by_another": ["a", "b"],
        "made_by_none": ["a", "b"],
    }
    assert mention_errors(entities, mentioned) == [
        "bumped_twice",
        "linked_twice",
        "made_by_another",
        "made_by_none",
    ]
