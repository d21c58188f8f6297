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
from turngraph.workers.graph.neo4j_only import (
    Neo4jOnlyStatement,
    apply_neo4j_only,
    fulltext_node_index,
)
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


@pytest.mark.parametrize("graph_engine", [neo4j_param()], indirect=True)
def test_workers_setting_up_the_neo4j_only_indexes_together_all_succeed(clients: Clients) -> None:
    """The same race over the full-text indexes only Neo4j gets (``apply_neo4j_only``, at
    every ingest worker's start after the schema): on the old code the worker that lost it
    exited with `the graph server answered ClientError`, bench.chaos's crash on Neo4j."""
    names = [f"race_text_{uuid.uuid4().hex[:10]}" for _ in range(ROUNDS)]
    failures: list[BaseException] = []
    try:
        for name in names:
            statement = Neo4jOnlyStatement(
                name, fulltext_node_index(name, [f"R{name}"], ["text"]), "a raced index"
            )
            barrier = threading.Barrier(STARTERS)

            def start(
                statement: Neo4jOnlyStatement = statement, b: threading.Barrier = barrier
            ) -> None:
                b.wait()
                try:
                    apply_neo4j_only(clients.graph, [statement], clients.graph_database)
                except Exception as exc:  # collected: asserted below
                    failures.append(exc)

            threads = [threading.Thread(target=start) for _ in range(STARTERS)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        assert [getattr(f, "code", repr(f)) for f in failures] == []
        assert set(names) <= existing_schema_names(clients.graph, clients.graph_database)
    finally:
        for name in names:
            clients.graph.execute_query(
                f"DROP INDEX {name} IF EXISTS", database_=clients.graph_database
            )
