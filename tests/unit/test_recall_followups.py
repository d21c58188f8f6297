from __future__ import annotations

from typing import Literal

import pytest

from turngraph.schemas.recall import ConversationTurn
from turngraph.schemas.scopes import ScopeName
from turngraph.workers.recall.followups import (
    QueryPlan,
    auto_scopes,
    context_boost,
    is_follow_up,
    plan_query,
    resolve_scopes,
)
from turngraph.workers.recall.ranking import DEFAULT
from turngraph.workers.recall.text import stem, tokenize


def _nothing_known(_: str) -> bool:
    return False


@pytest.mark.parametrize(
    "query",
    [
        "and what happens if it falls on a weekend?",
        "what about the closing date, same rule?",
        "so which comes first?",
        "who is responsible for that?",
        "timeout?",
    ],
)
def test_reference_heavy_queries_are_follow_ups(query: str) -> None:
    assert is_follow_up(query)


def test_a_self_contained_query_is_not_a_follow_up() -> None:
    assert not is_follow_up("how did we shard the integration-db suite in CI pipelines")


def test_a_query_that_names_its_subject_is_no_follow_up_for_its_references() -> None:
    """Chat speech says "it" and "that"; a query that says at length what it is about
    needs no terms from the context to resolve them."""
    long_query = "so remind me what it was that we chose for the staging cache eviction policy"
    assert not is_follow_up(long_query)
    plan = plan_query(
        long_query,
        [ConversationTurn(role="user", content="the grafana dashboard alerts keep firing")],
        idf_of=lambda term: 1.0,
        known_entities=lambda grams: [],
        ranking=DEFAULT,
    )
    assert "grafana" not in plan.terms
    assert plan.context_terms  # the context still lifts what is tied to it


def test_auto_picks_user_for_personal_preferences() -> None:
    scopes = auto_scopes("what are my preferences for commit messages", _nothing_known)
    assert scopes[0] is ScopeName.USER
    assert auto_scopes("what terminology do I use for payouts", _nothing_known)[0] is ScopeName.USER


def test_auto_picks_session_and_workspace_for_project_questions() -> None:
    expected = (ScopeName.SESSION, ScopeName.WORKSPACE)
    assert auto_scopes("why does payment_service.py retry twice", _nothing_known) == expected
    assert auto_scopes("what broke the CI pipeline", _nothing_known) == expected
    assert auto_scopes("what about lumen", lambda gram: gram == "lumen") == expected


def test_auto_default_order_is_session_workspace_user() -> None:
    assert auto_scopes("what did we say about weekends", _nothing_known) == (
        ScopeName.SESSION,
        ScopeName.WORKSPACE,
        ScopeName.USER,
    )


def test_resolve_keeps_explicit_order_and_drops_repeats() -> None:
    scopes = resolve_scopes((ScopeName.USER, ScopeName.AUTO), "flaky test", _nothing_known)
    assert scopes == (ScopeName.USER, ScopeName.SESSION, ScopeName.WORKSPACE)


def _plan(query: str, context: list[tuple[Literal["user", "assistant"], str]]) -> QueryPlan:
    turns = [ConversationTurn(role=r, content=c) for r, c in context]
    return plan_query(
        query,
        turns,
        idf_of=lambda term: 1.0,
        known_entities=lambda grams: [g for g in grams if g == "determination date"],
        ranking=DEFAULT,
    )


def test_follow_up_is_expanded_with_the_context_terms_and_entities() -> None:
    plan = _plan(
        "and what happens if it falls on a weekend?",
        [("user", "What is the Determination Date?"), ("assistant", "The 15th of each month.")],
    )
    assert plan.follow_up
    assert 0 < plan.terms[stem("determination")] <= DEFAULT.expansion_weight
    assert plan.terms["weekend"] == 1.0
    assert all(w <= 1.0 for w in plan.terms.values())
    assert plan.entities == {"determination date": 0.5}


def test_standalone_query_is_not_expanded_but_notes_the_session_topics() -> None:
    plan = _plan(
        "how is the closing date computed for quarterly statements",
        [("user", "What is the Determination Date?")],
    )
    assert not plan.follow_up
    assert "determination date" in plan.context_entities
    query = "how is the closing date computed for quarterly statements"
    assert plan.terms == dict.fromkeys(tokenize(query), 1.0)


def test_no_context_means_no_expansion() -> None:
    plan = _plan("which comes first?", [])
    assert not plan.follow_up and not plan.context_terms


def test_context_boost_is_small_and_bounded() -> None:
    assert context_boost(0, 0.0, 0.15) == 1.0
    assert context_boost(1, 0.5, 0.15) > 1.0
    assert context_boost(50, 10.0, 0.15) == pytest.approx(1.15)
