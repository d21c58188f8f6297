"""Ingest workers starting together set up the graph schema at the same time (chaos
replaces killed workers in bursts): on Neo4j a ``CREATE CONSTRAINT … IF NOT EXISTS`` that
loses the race to an identical one of another transaction fails with
``EquivalentSchemaRuleAlreadyExists``; that worker then exited 1 (the crashes of
``bench.chaos`` on Neo4j). The rule is there, which is all the worker asked for."""

from __future__ import annotations

import threading
import uuid

import pytest

from tests.support.neo4j_tier import neo4j_param
from turngraph.clients import Clients
from turngraph.workers.graph.schema import ensure_schema, existing_schema_names

pytestmark = pytest.mark.timeout(300)

STARTERS = 6
"""Workers setting up the schema at once."""

ROUNDS = 5
"""Fresh labels raced over, one round each (every round is a new schema to create)."""


@pytest.mark.parametrize("graph_engine", [neo4j_param()], indirect=True)
def test_workers_setting_up_the_schema_together_all_succeed(clients: Clients) -> None:
    labels = [f"Race{uuid.uuid4().hex[:10]}" for _ in range(ROUNDS)]
    failures: list[BaseException] = []
    try:
        for label in labels:
            barrier = threading.Barrier(STARTERS)

            def start(label: str = label, barrier: threading.Barrier = barrier) -> None:
                barrier.wait()
                try:
                    ensure_schema(clients.graph, clients.graph_database, [label])
                except Exception as exc:  # collected: asserted below
                    failures.append(exc)

            threads = [threading.Thread(target=start) for _ in range(STARTERS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert failures == []
        present = existing_schema_names(clients.graph, clients.graph_database)
        for label in labels:
            assert f"{label.lower()}_uid" in present
    finally:
        present = existing_schema_names(clients.graph, clients.graph_database)
        for name in sorted(present):
            if name.startswith(tuple(label.lower() for label in labels)):
                kind = "CONSTRAINT" if name.endswith("_uid") else "INDEX"
                clients.graph.execute_query(
                    f"DROP {kind} {name} IF EXISTS", database_=clients.graph_database
                )
