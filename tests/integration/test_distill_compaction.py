"""Compaction run twice, or by two workers at once, yields the same graph."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime
from typing import Any

import pytest

from tests.support.distill import decision_events, distiller_for
from tests.support.turns import turn
from turngraph.app import build_pipeline
from turngraph.clients import Clients, build_clients
from turngraph.workers.maintenance.compaction import compact_due, compact_topic
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.summaries import summarize_session

pytestmark = pytest.mark.both_engines

FIXED_NOW = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)


class FixedClock(Distiller):
    def now(self) -> datetime:
        return FIXED_NOW


def _fixed(clients: Clients, **options: Any) -> FixedClock:
    plain = distiller_for(clients, **options)
    return FixedClock(
        store=plain.store,
        redis=plain.redis,
        changes_stream=plain.changes_stream,
        options=plain.options,
    )


def _prepare(clients: Clients) -> None:
    events = decision_events()
    pipeline = build_pipeline(clients)
    distiller = _fixed(clients, compact_min_summaries=99)
    for step in (range(0, 3), range(3, 6), range(6, 10)):
        pipeline.ingest([events[i] for i in step])
        summarize_session(distiller, "s_dec", through_turn=step[-1])


INGEST_CLOCK = ("ingested_at",)
"""Wall-clock properties the ingest pipeline writes (the setup runs twice below)."""


def _props(props: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in props.items() if k not in INGEST_CLOCK}


def _snapshot(clients: Clients) -> list[str]:
    """Every node and relationship with its properties, element ids left out."""
    records, _, _ = clients.graph.execute_query(
        # the graph's identity is made anew by the first worker on a graph
        "MATCH (n) WHERE NOT n:TurngraphGraph RETURN labels(n) AS labels, properties(n) AS props",
        database_=clients.graph_database,
    )
    nodes = [json.dumps([sorted(r["labels"]), _props(r["props"])], sort_keys=True, default=str)
             for r in records]  # fmt: skip
    records, _, _ = clients.graph.execute_query(
        "MATCH (a)-[r]->(b) RETURN type(r) AS t, properties(r) AS props, "
        "coalesce(a.uid, a.event_id, a.key) AS a, coalesce(b.uid, b.event_id, b.key) AS b",
        database_=clients.graph_database,
    )
    rels = [json.dumps([r["t"], r["a"], r["b"], r["props"]], sort_keys=True, default=str)
            for r in records]  # fmt: skip
    return sorted(nodes) + sorted(rels)


def test_compaction_twice_changes_nothing(clients: Clients) -> None:
    _prepare(clients)
    distiller = _fixed(clients)
    assert compact_topic(distiller, "w_dec", "job-queue") is not None
    once = _snapshot(clients)
    assert compact_topic(distiller, "w_dec", "job-queue") is None  # nothing left open
    assert compact_due(distiller) == []
    assert _snapshot(clients) == once
    assert sum('"DecisionRecord"' in line for line in once) == 1


def test_two_workers_at_once_write_the_same_graph(clients: Clients) -> None:
    _prepare(clients)
    distiller = _fixed(clients)
    compact_topic(distiller, "w_dec", "job-queue")
    sequential = _snapshot(clients)

    clients.graph.execute_query("MATCH (n) DETACH DELETE n", database_=clients.graph_database)
    _prepare(clients)
    workers = [build_clients(clients.settings) for _ in range(2)]
    barrier = threading.Barrier(2)
    results: list[Any] = []

    def work(own: Clients) -> None:
        barrier.wait()
        results.append(compact_topic(_fixed(own), "w_dec", "job-queue"))

    threads = [threading.Thread(target=work, args=(own,)) for own in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    for own in workers:
        own.close()
    assert len(results) == 2 and sum(r is not None for r in results) == 1
    assert _snapshot(clients) == sequential


UNDECIDED = [
    ("user", "I'm planning the first leg of the trip: the drive from Chengdu to Kangding."),
    ("assistant", "The first leg is about 300 km of mountain road. How many days do you have?"),
    ("user", "About three days for the first leg, and I get carsick on mountain roads."),
    ("assistant", "Then split the drive in two and stop overnight in Ya'an. What about hotels?"),
    ("user", "Not sure yet about hotels, I need to check prices for the first leg."),
    ("assistant", "Prices in Ya'an are moderate; Kangding is dearer in the holiday week."),
]


def test_a_topic_without_a_decision_gets_no_record(clients: Clients) -> None:
    """Issue 20: "Phase 1: no decision yet" records merged the summaries of unrelated
    sessions (up to 48 turns) and took the whole top 10 of a question. Summaries that
    decided nothing stay open; a record is made only once a decision is stated."""
    events = [
        turn(text, index, role=role, session="s_und", workspace="w_und", user="u_und")
        for index, (role, text) in enumerate(UNDECIDED)
    ]
    pipeline = build_pipeline(clients)
    distiller = _fixed(clients, compact_min_summaries=99)
    made = []
    for step in (range(0, 2), range(2, 4), range(4, 6)):
        pipeline.ingest([events[i] for i in step])
        made += summarize_session(distiller, "s_und", through_turn=step[-1])
    assert made and not any(s.content.decisions for s in made)
    for topic_id in {s.topic_id for s in made}:
        assert compact_topic(distiller, "w_und", topic_id) is None  # even when asked for
    records, _, _ = clients.graph.execute_query(
        "MATCH (s:Summary) RETURN s.status AS status", database_=clients.graph_database
    )
    assert len(records) == len(made)
    assert {r["status"] for r in records} == {"Draft"}
    records, _, _ = clients.graph.execute_query(
        "MATCH (r:DecisionRecord) RETURN count(r) AS n", database_=clients.graph_database
    )
    assert records[0]["n"] == 0
