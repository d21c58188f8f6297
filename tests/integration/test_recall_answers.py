"""Recall answers the question asked (issue 37): for a question, what settles it (a
decision, a stated preference, a confirmation) comes before what only asks it, and a
question turn is returned only together with its answer."""

from __future__ import annotations

import threading

import pytest

from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.recall import RecallResponse
from turngraph.schemas.turn_event import TurnEvent


def _recall(clients: Clients, events: list[TurnEvent], query: str) -> RecallResponse:
    build_pipeline(clients).ingest(events)
    recall = build_recall_worker(clients)
    assert recall.bootstrap() >= len(events)
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    try:
        return RecallClient(clients.redis, deadline_ms=5_000).recall(
            query, session_id="s9", workspace="w1", user="u1", max_results=5
        )
    finally:
        recall.stop()
        thread.join(timeout=10)


ORDERS = [
    turn("Should we use MySQL or Postgres for the orders database?", 0, session="s1"),
    turn(
        "Both work. Postgres has better JSON support and transactional DDL; MySQL is what "
        "the billing team already runs.",
        1,
        session="s1",
        role="assistant",
    ),
    turn("Agreed: we'll use Postgres 16 for orders.", 2, session="s1"),
    turn(
        "The orders page shows a blank table when the database returns no rows; fix the "
        "empty state.",
        0,
        session="s2",
    ),
    turn("Fixed: the orders table now renders an empty state.", 1, session="s2", role="assistant"),
]


@pytest.mark.integration
def test_the_decision_comes_before_the_question_it_settles(clients: Clients) -> None:
    response = _recall(clients, ORDERS, "which database did we pick for orders?")
    texts = [r.text for r in response.results]
    assert texts, "no results"
    assert texts[0].startswith("Agreed: we'll use Postgres 16"), texts
    asked = next((i for i, t in enumerate(texts) if t.startswith("Should we use MySQL")), None)
    assert asked is None or asked > 0


TESTS = [
    turn("The exporter tests fail on CI since the clock change.", 0, session="s1"),
    turn(
        "Fixed the bug the user hit: the tests written for the exporter wanted a UTC clock; "
        "they pass now.",
        1,
        session="s1",
        role="assistant",
    ),
    turn(
        "For tests I always want pytest functions against real services, never mocks.",
        0,
        session="s2",
    ),
    turn("Understood, pytest functions against real services.", 1, session="s2", role="assistant"),
]


@pytest.mark.integration
def test_the_stated_preference_comes_before_a_bug_fix(clients: Clients) -> None:
    response = _recall(clients, TESTS, "how does the user want tests written?")
    texts = [r.text for r in response.results]
    assert texts and texts[0].startswith("For tests I always want"), texts


QUESTION_ONLY = [
    turn(
        "Which message broker should the invoices service use, Kafka or RabbitMQ?", 0, session="s1"
    ),
    turn(
        "RabbitMQ: the invoices volume is small and the team knows it.",
        1,
        session="s1",
        role="assistant",
    ),
    turn("Let's go with RabbitMQ then.", 2, session="s1"),
]


@pytest.mark.integration
def test_a_question_turn_comes_only_with_its_answer(clients: Clients) -> None:
    response = _recall(clients, QUESTION_ONLY, "which message broker for invoices?")
    texts = [r.text for r in response.results]
    asked = next(i for i, t in enumerate(texts) if t.startswith("Which message broker"))
    settled = next(i for i, t in enumerate(texts) if t.startswith("Let's go with RabbitMQ"))
    assert settled < asked, texts
