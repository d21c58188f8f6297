"""The Neo4j-only statements against the embedded engine: never applied, truly Neo4j-only."""

from __future__ import annotations

import neo4j
import pytest

from turngraph.clients import Clients
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.workers.graph.neo4j_only import (
    Neo4jOnlyStatement,
    apply_neo4j_only,
    neo4j_only_statements,
    server_is_neo4j,
)

pytestmark = pytest.mark.integration

STATEMENTS = neo4j_only_statements(ONTOLOGY.labels(), ONTOLOGY.relationship_types())


def index_names(clients: Clients) -> set[str]:
    records, _, _ = clients.graph.execute_query(
        "SHOW INDEXES YIELD name RETURN name", database_=clients.graph_database
    )
    return {r["name"] for r in records}


def test_the_embedded_engine_is_not_taken_for_neo4j(clients: Clients) -> None:
    # It answers dbms.components() exactly like Neo4j; the Bolt agent gives it away.
    records, _, _ = clients.graph.execute_query(
        "CALL dbms.components() YIELD name RETURN name", database_=clients.graph_database
    )
    assert [r["name"] for r in records] == ["Neo4j Kernel"]
    assert not server_is_neo4j(clients.graph, clients.graph_database)


def test_nothing_is_applied_on_the_embedded_engine(clients: Clients) -> None:
    before = index_names(clients)

    applied = apply_neo4j_only(clients.graph, STATEMENTS, clients.graph_database)

    assert applied == []
    assert index_names(clients) == before


@pytest.mark.parametrize("statement", STATEMENTS, ids=lambda s: s.name)
def test_each_statement_really_needs_neo4j(clients: Clients, statement: Neo4jOnlyStatement) -> None:
    # If the embedded engine ever accepts one, it belongs with the portable schema instead.
    with pytest.raises(neo4j.exceptions.Neo4jError):
        clients.graph.execute_query(statement.cypher, database_=clients.graph_database)
