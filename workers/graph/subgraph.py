"""What belongs to a scope, read out of the graph: for export, forget and the HTML view.

A scope's subgraph is its own nodes (the scope node, its sessions and episodes, entities
resolved in it, summaries and memories kept in it) plus the entities its episodes
mention, and every relationship between two of those nodes. Every statement runs on
Neo4j 5 and on the embedded engine; lookups go by indexed keys or by element id.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j

from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.neo4j_only import quote_identifier

__all__ = [
    "DERIVED_BY_SCOPE", "DERIVED_LABELS", "ENTITIES_BY_SCOPE", "EPISODES_BY_SCOPE",
    "EPISODE_SCOPE_PROPERTY", "FETCH_BATCH", "MENTIONED_BY", "NODES_BY_ID", "RELATIONSHIPS_FROM",
    "SCOPE_LABEL", "SCOPE_NODE", "SESSIONS_BY_SCOPE", "WORKSPACES_OF", "GraphNode",
    "GraphRelationship", "Subgraph", "ids_in_batches", "mentioned_ids", "own_node_ids",
    "read_nodes", "read_relationships_among", "read_scope", "scope_node_ids", "workspace_ids_of",
]  # fmt: skip

FETCH_BATCH = 1_000
"""Element ids per round trip when reading nodes and relationships."""


EPISODE_SCOPE_PROPERTY: dict[Scope, str] = {
    Scope.SESSION: "session_id",
    Scope.WORKSPACE: "workspace",
    Scope.USER: "user",
}
"""The Episode property holding each scope's key (range-indexed)."""

SCOPE_LABEL: dict[Scope, str] = {
    Scope.SESSION: "Session",
    Scope.WORKSPACE: "Workspace",
    Scope.USER: "User",
}
"""The node that stands for the scope itself, keyed by ``key``."""

DERIVED_LABELS: tuple[str, ...] = ("Summary", "DecisionRecord", "Memory")
"""Nodes made from a scope's turns; they carry the scope's keys like episodes do."""


# Statements: ``{label}`` and ``{prop}`` are formatted in (quoted or from fixed tables).
SCOPE_NODE = "MATCH (n:{label} {{key: $key}}) RETURN elementId(n) AS id"
EPISODES_BY_SCOPE = "MATCH (n:Episode {{{prop}: $key}}) RETURN elementId(n) AS id"
SESSIONS_BY_SCOPE = "MATCH (n:Session) WHERE n.{prop} = $key RETURN elementId(n) AS id"
ENTITIES_BY_SCOPE = "MATCH (n:{label} {{scope_key: $key}}) RETURN elementId(n) AS id"
DERIVED_BY_SCOPE = "MATCH (n:{label}) WHERE n.{prop} = $key RETURN elementId(n) AS id"
MENTIONED_BY = """
UNWIND $ids AS id MATCH (e:Episode) WHERE elementId(e) = id
MATCH (e)-[:MENTIONS]->(x) RETURN DISTINCT elementId(x) AS id
"""
WORKSPACES_OF = """
UNWIND $ids AS id MATCH (s:Session) WHERE elementId(s) = id
MATCH (s)-[:IN_WORKSPACE]->(w:Workspace) RETURN DISTINCT elementId(w) AS id
"""
NODES_BY_ID = """
UNWIND $ids AS id MATCH (n) WHERE elementId(n) = id
RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS properties
"""
RELATIONSHIPS_FROM = """
UNWIND $ids AS id MATCH (a) WHERE elementId(a) = id MATCH (a)-[r]->(b)
RETURN elementId(r) AS id, type(r) AS type, elementId(a) AS start, elementId(b) AS end,
  properties(r) AS properties
"""


@dataclass(frozen=True)
class GraphNode:
    element_id: str
    labels: tuple[str, ...]
    properties: dict[str, Any]


@dataclass(frozen=True)
class GraphRelationship:
    element_id: str
    type: str
    start: str
    end: str
    properties: dict[str, Any]


@dataclass
class Subgraph:
    nodes: list[GraphNode] = field(default_factory=list)
    relationships: list[GraphRelationship] = field(default_factory=list)
    episode_ids: list[str] = field(default_factory=list)
    """``event_id`` of every episode of the scope (not of mentioned neighbours)."""


def _read(
    driver: neo4j.Driver, database: str | None, query: str, **params: Any
) -> list[neo4j.Record]:
    with graph_errors("read scope"):
        records, _, _ = driver.execute_query(
            query, params, database_=database, routing_=neo4j.RoutingControl.READ
        )
    return records


def _ids(driver: neo4j.Driver, database: str | None, query: str, **params: Any) -> list[str]:
    return [record["id"] for record in _read(driver, database, query, **params)]


def scope_node_ids(driver: neo4j.Driver, database: str | None, scope: Scope, key: str) -> list[str]:
    """The node standing for the scope itself (none if it was never written)."""
    return _ids(driver, database, SCOPE_NODE.format(label=SCOPE_LABEL[scope]), key=key)


def own_node_ids(
    driver: neo4j.Driver, database: str | None, scope: Scope, key: str, entity_labels: Iterable[str]
) -> list[str]:
    """Element ids of the nodes that belong to the scope itself (forget deletes these)."""
    prop = quote_identifier(EPISODE_SCOPE_PROPERTY[scope])
    queries = [EPISODES_BY_SCOPE.format(prop=prop)]
    if scope is not Scope.SESSION:
        queries.append(SESSIONS_BY_SCOPE.format(prop=prop))
        queries += [
            ENTITIES_BY_SCOPE.format(label=quote_identifier(label))
            for label in sorted(set(entity_labels))
        ]
    derived_prop = "scope_key" if scope is not Scope.SESSION else "session_id"
    queries += [DERIVED_BY_SCOPE.format(label=label, prop=derived_prop) for label in DERIVED_LABELS]
    seen: dict[str, None] = dict.fromkeys(scope_node_ids(driver, database, scope, key))
    for query in queries:
        seen.update(dict.fromkeys(_ids(driver, database, query, key=key)))
    return list(seen)


def mentioned_ids(driver: neo4j.Driver, database: str | None, node_ids: Sequence[str]) -> list[str]:
    """Element ids of what the given episodes mention."""
    return ids_in_batches(driver, database, MENTIONED_BY, node_ids)


def workspace_ids_of(
    driver: neo4j.Driver, database: str | None, node_ids: Sequence[str]
) -> list[str]:
    """Element ids of the workspaces the given sessions belong to."""
    return ids_in_batches(driver, database, WORKSPACES_OF, node_ids)


def ids_in_batches(
    driver: neo4j.Driver, database: str | None, query: str, node_ids: Sequence[str]
) -> list[str]:
    """The distinct ``id`` column ``query`` returns for ``$ids`` read a batch at a time."""
    found: dict[str, None] = {}
    for start in range(0, len(node_ids), FETCH_BATCH):
        batch = list(node_ids[start : start + FETCH_BATCH])
        found.update(dict.fromkeys(_ids(driver, database, query, ids=batch)))
    return list(found)


def read_nodes(driver: neo4j.Driver, database: str | None, ids: Sequence[str]) -> list[GraphNode]:
    nodes: list[GraphNode] = []
    for start in range(0, len(ids), FETCH_BATCH):
        records = _read(driver, database, NODES_BY_ID, ids=list(ids[start : start + FETCH_BATCH]))
        nodes += [
            GraphNode(r["id"], tuple(sorted(r["labels"])), dict(r["properties"])) for r in records
        ]
    return nodes


def read_relationships_among(
    driver: neo4j.Driver, database: str | None, ids: Sequence[str]
) -> list[GraphRelationship]:
    """Every relationship whose two ends are both in ``ids``."""
    members = set(ids)
    found: dict[str, GraphRelationship] = {}
    for start in range(0, len(ids), FETCH_BATCH):
        batch = list(ids[start : start + FETCH_BATCH])
        records = _read(driver, database, RELATIONSHIPS_FROM, ids=batch)
        for r in records:
            if r["end"] in members:
                found[r["id"]] = GraphRelationship(
                    r["id"], r["type"], r["start"], r["end"], dict(r["properties"])
                )
    return list(found.values())


def read_scope(
    driver: neo4j.Driver, database: str | None, scope: Scope, key: str, entity_labels: Iterable[str]
) -> Subgraph:
    """The scope's subgraph: its own nodes, what its episodes mention, the workspaces its
    sessions are in, and the relationships among all of them."""
    own = own_node_ids(driver, database, scope, key, entity_labels)
    context = [*mentioned_ids(driver, database, own), *workspace_ids_of(driver, database, own)]
    ids = list(dict.fromkeys([*own, *context]))
    nodes = read_nodes(driver, database, ids)
    relationships = read_relationships_among(driver, database, ids)
    own_set = set(own)
    episode_ids = [
        str(n.properties["event_id"])
        for n in nodes
        if "Episode" in n.labels and n.element_id in own_set and "event_id" in n.properties
    ]
    return Subgraph(nodes=nodes, relationships=relationships, episode_ids=episode_ids)
