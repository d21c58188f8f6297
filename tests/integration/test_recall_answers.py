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
    return _recall_each(clients, events, [query])[0]


def _recall_each(
    clients: Clients, events: list[TurnEvent], queries: list[str]
) -> list[RecallResponse]:
    """``events`` ingested, then each query answered by one replica, in the user's flow."""
    build_pipeline(clients).ingest(events)
    recall = build_recall_worker(clients)
    assert recall.bootstrap() >= len(events)
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    try:
        client = RecallClient(clients.redis, deadline_ms=5_000)
        return [
            client.recall(query, session_id="s9", workspace="w1", user="u1", max_results=5)
            for query in queries
        ]
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


OTHER_LANGUAGES = [
    turn("Мы выбрали базу данных Постгрес для заказов.", 0, session="s1"),
    turn("База данных для отчётов: Кликхаус, решили вчера.", 1, session="s1"),
    turn("我们决定用红色的按钮。", 0, session="s2"),
    turn("按钮上的文字用白色。", 1, session="s2"),
    turn("ボタンの色は赤に決めました。", 2, session="s2"),
    turn("Für die Größe der Daten reicht eine Festplatte mit 2 TB.", 0, session="s3"),
    turn("The release notes go out on Fridays.", 0, session="s4"),
]


@pytest.mark.integration
def test_a_user_who_writes_in_another_language_finds_what_they_said(clients: Clients) -> None:
    """Through the real pipeline and a replica: memories in Russian, Chinese, Japanese and
    German are found by words of their own language. Before, a text with no ASCII word had
    an empty word set, so the second Russian and the second Chinese memory were dropped as
    "duplicates" of the first."""
    russian, chinese, japanese, german = _recall_each(
        clients,
        OTHER_LANGUAGES,
        ["какая база данных?", "按钮用什么颜色", "ボタンの色は?", "Grösse der Daten"],
    )
    texts = [r.text for r in russian.results]
    assert {OTHER_LANGUAGES[0].content, OTHER_LANGUAGES[1].content} <= set(texts), texts
    texts = [r.text for r in chinese.results]
    assert {OTHER_LANGUAGES[2].content, OTHER_LANGUAGES[3].content} <= set(texts), texts
    for response, said in ((japanese, 4), (german, 5)):
        texts = [r.text for r in response.results]
        assert texts and texts[0] == OTHER_LANGUAGES[said].content, texts
