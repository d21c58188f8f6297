"""``turngraph graph migrate``'s copy (``copy_graph``) from a real ArcadeDB into a real
Neo4j: a conversation ingested on ArcadeDB, distilled too, arrives whole (every node and
relationship, properties included), the source's identity stays behind, and copying
again changes nothing. The CLI path (`up`, `up --graph neo4j`, then `graph migrate`) is in
``test_first_run.py``; this is its seconds-long check."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import wipe_graph
from tests.support.conversation import CONVERSATION, ingest, snapshot
from tests.support.neo4j_tier import neo4j_param
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import ServiceEndpoints
from turngraph.settings import Settings
from turngraph.workers.graph.graph_copy import copy_graph
from turngraph.workers.graph.identity import IDENTITY_LABEL, read_graph_identity

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]


@pytest.fixture
def arcadedb(embedded: ServiceEndpoints, settings: Settings) -> Iterator[Clients]:
    """The session's ArcadeDB beside the test's Neo4j (``clients``), one Redis for both."""
    built = build_clients(with_endpoints(settings, embedded))
    wipe_graph(built.graph, built.graph_database)
    yield built
    wipe_graph(built.graph, built.graph_database)
    built.close()


def _without_identity(graph: tuple[set[Any], set[Any]]) -> tuple[set[Any], set[Any]]:
    nodes, relationships = graph
    return {n for n in nodes if not n[0].startswith(IDENTITY_LABEL)}, relationships


@pytest.mark.parametrize("graph_engine", [neo4j_param()], indirect=True)
def test_migrate_copies_an_arcadedb_graph_into_neo4j_whole(
    clients: Clients, arcadedb: Clients
) -> None:
    assert clients.graph.get_server_info().agent.startswith("Neo4j/5")
    ingest(arcadedb, CONVERSATION, distill=True)
    source = snapshot(arcadedb)
    source_identity = read_graph_identity(arcadedb.graph, arcadedb.graph_database)
    assert source_identity is not None and len(source[0]) > len(CONVERSATION)

    report = copy_graph(
        arcadedb.graph, arcadedb.graph_database, clients.graph, clients.graph_database
    )

    assert report.nodes == len(source[0]) - 1  # all but the identity node
    assert report.relationships == len(source[1]) > 0
    assert snapshot(clients) == _without_identity(source)
    assert read_graph_identity(clients.graph, clients.graph_database) is None
    copy_graph(arcadedb.graph, arcadedb.graph_database, clients.graph, clients.graph_database)
    assert snapshot(clients) == _without_identity(source)  # a second copy changes nothing
