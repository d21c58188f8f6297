"""Which graph this is, and which turns it holds: what Redis's ingest markers are checked
against (a marker may save work, never decide alone that a turn exists).

Schema setup gives every graph one ``TurngraphGraph`` node with a random ``graph_id``,
created once (``MERGE``), so a graph that is new or was wiped has an id no marker was
recorded against, and another engine's graph has its own.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass

import neo4j

from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.neo4j_only import server_is_neo4j
from turngraph.workers.graph.retry import run_write

__all__ = [
    "IDENTITY_LABEL", "GraphIdentity", "ensure_graph_identity", "read_graph_identity",
    "stored_event_ids",
]  # fmt: skip

IDENTITY_LABEL = "TurngraphGraph"
"""The label of the one node that names the graph (never a scope's, never recalled)."""

ENSURE_IDENTITY = f"""
MERGE (g:{IDENTITY_LABEL} {{key: 'identity'}})
ON CREATE SET g.graph_id = $graph_id, g.created_at = datetime()
RETURN g.graph_id AS graph_id
"""

READ_IDENTITY = f"MATCH (g:{IDENTITY_LABEL} {{key: 'identity'}}) RETURN g.graph_id AS graph_id"

STORED_EPISODES = "MATCH (e:Episode) WHERE e.event_id IN $ids RETURN e.event_id AS id"


@dataclass(frozen=True)
class GraphIdentity:
    """A graph's id (``TurngraphGraph.graph_id``) and its engine (``neo4j`` or ``arcadedb``)."""

    graph_id: str
    engine: str

    def describe(self) -> str:
        return f"{self.engine} graph {self.graph_id[:8]}"


def _engine(driver: neo4j.Driver, database: str | None) -> str:
    return "neo4j" if server_is_neo4j(driver, database) else "arcadedb"


def ensure_graph_identity(driver: neo4j.Driver, database: str | None) -> GraphIdentity:
    """The graph's identity, created if it has none (a new or wiped graph); idempotent,
    safe from concurrent workers (``MERGE`` on one key, retried on a conflict)."""
    with graph_errors("record the graph's identity"):
        engine = _engine(driver, database)

        def merge(tx: neo4j.ManagedTransaction) -> str:
            record = tx.run(ENSURE_IDENTITY, graph_id=uuid.uuid4().hex).single()
            assert record is not None
            return str(record["graph_id"])

        return GraphIdentity(run_write(driver, database, merge), engine)


def read_graph_identity(driver: neo4j.Driver, database: str | None) -> GraphIdentity | None:
    """The graph's identity, or None when it has none (new or wiped since a worker
    started); never writes."""
    with graph_errors("read the graph's identity"):
        records, _, _ = driver.execute_query(
            READ_IDENTITY, database_=database, routing_=neo4j.RoutingControl.READ
        )
        if not records or records[0]["graph_id"] is None:
            return None
        return GraphIdentity(str(records[0]["graph_id"]), _engine(driver, database))


def stored_event_ids(
    driver: neo4j.Driver, database: str | None, event_ids: Sequence[str]
) -> set[str]:
    """Which of ``event_ids`` have an Episode in the graph (one indexed lookup)."""
    if not event_ids:
        return set()
    with graph_errors("look up stored turns"):
        records, _, _ = driver.execute_query(
            STORED_EPISODES,
            ids=list(event_ids),
            database_=database,
            routing_=neo4j.RoutingControl.READ,
        )
    return {str(r["id"]) for r in records}
