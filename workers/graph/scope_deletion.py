"""Deleting a scope from the graph over Bolt (the graph half of ``turngraph forget``).

The scope's own nodes (:mod:`workers.graph.subgraph`) and the provenance its turns gave
elsewhere; idempotent. What goes: docs/architecture.md ("Delivery", Forget).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import neo4j

from turngraph.schemas.changes import MemoryRecord
from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.recallable import (
    DIRECTIVES_BY_UID,
    RECALLABLE_ENTITY_TYPES,
    directive_memory,
)
from turngraph.workers.graph.retry import run_write
from turngraph.workers.graph.store import ScopeDeletion
from turngraph.workers.graph.subgraph import (
    EPISODE_SCOPE_PROPERTY,
    Scope,
    ids_in_batches,
    mentioned_ids,
    own_node_ids,
    scope_node_ids,
    workspace_ids_of,
)

__all__ = [
    "DELETE_BATCH", "DELETE_EMPTY_WORKSPACES", "DELETE_NODES", "DIRECTIVES_AMONG",
    "EVENT_IDS_BY_SCOPE", "PRUNE_ENTITIES", "PRUNE_FACTS", "REACTIVATE_DECISIONS", "SUPERSEDED_BY",
    "delete_scope", "read_directives", "scope_event_ids",
]  # fmt: skip

DIRECTIVES_AMONG = """
UNWIND $ids AS id MATCH (n) WHERE elementId(n) = id AND n.uid IS NOT NULL
RETURN n.uid AS uid, labels(n) AS labels
"""

DELETE_BATCH = 500
"""Nodes per write transaction: a large scope is deleted in many small transactions."""


def _batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


PRUNE_FACTS = """
UNWIND $ids AS id
MATCH (a) WHERE elementId(a) = id
MATCH (a)-[r]-() WHERE any(x IN r.episode_ids WHERE x IN $forgotten)
WITH DISTINCT r
WITH r, [x IN r.episode_ids WHERE NOT x IN $forgotten] AS after,
     r.episode_ids[0] IN $forgotten AS stated_by_forgotten
SET r.episode_ids = after,
    r.statement = CASE WHEN stated_by_forgotten THEN '' ELSE r.statement END
WITH r, after WHERE size(after) = 0
DELETE r
"""

PRUNE_ENTITIES = """
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id
OPTIONAL MATCH (e:Episode)-[:MENTIONS]->(n)
WITH n, e ORDER BY e.occurred_at, e.event_id
WITH n, count(e) AS before,
     collect(CASE WHEN e.event_id IN $forgotten THEN null ELSE e.event_id END) AS kept
WITH n, before, kept, coalesce(n.first_episode_id, n.episode_ids[0]) AS first_id
WHERE size(kept) < before
WITH n, kept, first_id, first_id IN $forgotten AS created_by_forgotten
SET n.mentions = size(kept), n.episode_ids = null,
    n.first_episode_id = CASE WHEN created_by_forgotten THEN head(kept) ELSE first_id END,
    n.summary = CASE WHEN created_by_forgotten THEN '' ELSE n.summary END,
    n.aliases = CASE WHEN created_by_forgotten THEN [] ELSE n.aliases END
WITH n, kept WHERE size(kept) = 0
DETACH DELETE n
"""
"""Each entity the forgotten turns mention, counted again from its ``MENTIONS`` (run
before those turns go): the count of the turns that stay, the earliest of them as its first
turn when a forgotten one made it (and its summary and aliases, the forgotten turn's words,
cleared), deleted when none stays. ``episode_ids`` is the list entities kept before
their provenance was their relationships (:mod:`workers.graph.entity_provenance`)."""

REACTIVATE_DECISIONS = """
UNWIND $ids AS id
MATCH (d:Decision) WHERE elementId(d) = id AND d.status = 'Superseded'
  AND NOT EXISTS { MATCH (d)<-[:SUPERSEDES]-(:Decision) }
SET d.status = 'Active'
REMOVE d.invalid_at
"""

EVENT_IDS_BY_SCOPE = "MATCH (e:Episode {{{prop}: $key}}) RETURN e.event_id AS id"

DELETE_NODES = "UNWIND $ids AS id MATCH (n) WHERE elementId(n) = id DETACH DELETE n"

SUPERSEDED_BY = """
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id
MATCH (n)-[:SUPERSEDES]->(old:Decision)
RETURN DISTINCT elementId(old) AS id
"""

DELETE_EMPTY_WORKSPACES = """
UNWIND $ids AS id
MATCH (w:Workspace) WHERE elementId(w) = id AND NOT EXISTS { MATCH (w)<-[:IN_WORKSPACE]-() }
DETACH DELETE w
"""


def scope_event_ids(
    driver: neo4j.Driver, database: str | None, scope: Scope, key: str
) -> list[str]:
    prop = EPISODE_SCOPE_PROPERTY[scope]
    with graph_errors("read scope turns"):
        records, _, _ = driver.execute_query(
            EVENT_IDS_BY_SCOPE.format(prop=prop),
            key=key,
            database_=database,
            routing_=neo4j.RoutingControl.READ,
        )
    return [r["id"] for r in records]


def _write(driver: neo4j.Driver, database: str | None, query: str, **params: Any) -> int:
    def work(tx: neo4j.ManagedTransaction) -> int:
        summary = tx.run(query, params).consume()
        return int(summary.counters.nodes_deleted)

    return run_write(driver, database, work, action="delete a scope")


def delete_scope(
    driver: neo4j.Driver, database: str | None, scope: Scope, key: str, entity_labels: Iterable[str]
) -> ScopeDeletion:
    """Delete the scope from the graph (see the module docstring)."""
    forgotten = scope_event_ids(driver, database, scope, key)
    own = own_node_ids(driver, database, scope, key, entity_labels)
    own_set = set(own)
    neighbours = [i for i in mentioned_ids(driver, database, own) if i not in own_set]
    touched = [*own, *neighbours]
    # Decisions a doomed decision superseded, and workspaces a doomed session was in:
    # once the scope is gone they may stand alone again.
    superseded = ids_in_batches(driver, database, SUPERSEDED_BY, touched)
    workspaces = workspace_ids_of(driver, database, own)
    directives = _directive_uids(driver, database, [*touched, *superseded])
    deleted = pruned = 0
    if forgotten:
        for batch in _batches(neighbours, DELETE_BATCH):
            _write(driver, database, PRUNE_FACTS, ids=batch, forgotten=forgotten)
            pruned += _write(driver, database, PRUNE_ENTITIES, ids=batch, forgotten=forgotten)
    # The scope node goes last: a rerun after a failure still finds the rest by key.
    scope_nodes = set(scope_node_ids(driver, database, scope, key))
    ordered = [i for i in own if i not in scope_nodes] + [i for i in own if i in scope_nodes]
    for batch in _batches(ordered, DELETE_BATCH):
        deleted += _write(driver, database, DELETE_NODES, ids=batch)
    for batch in _batches(superseded, DELETE_BATCH):
        _write(driver, database, REACTIVATE_DECISIONS, ids=batch)
    for batch in _batches(workspaces, DELETE_BATCH):
        deleted += _write(driver, database, DELETE_EMPTY_WORKSPACES, ids=batch)
    memories, removed = read_directives(driver, database, directives)
    return ScopeDeletion(
        nodes_deleted=deleted,
        entities_pruned=pruned,
        event_ids=forgotten,
        memories=memories,
        removed_memory_ids=removed,
    )


def _directive_uids(
    driver: neo4j.Driver, database: str | None, ids: Sequence[str]
) -> dict[str, list[str]]:
    """The recallable directive nodes among ``ids``, by label: a deletion may change them."""
    found: dict[str, list[str]] = {}
    for batch in _batches(ids, DELETE_BATCH):
        with graph_errors("read scope directives"):
            records, _, _ = driver.execute_query(
                DIRECTIVES_AMONG, ids=batch, database_=database, routing_=neo4j.RoutingControl.READ
            )
        for record in records:
            for label in RECALLABLE_ENTITY_TYPES.intersection(record["labels"]):
                found.setdefault(label, []).append(record["uid"])
    return found


def read_directives(
    driver: neo4j.Driver, database: str | None, uids: dict[str, list[str]]
) -> tuple[list[MemoryRecord], list[str]]:
    """(the directive memories as they now are, the ids of those that are gone)."""
    memories: list[MemoryRecord] = []
    removed: list[str] = []
    for label, wanted in sorted(uids.items()):
        with graph_errors("read directives"):
            records, _, _ = driver.execute_query(
                DIRECTIVES_BY_UID.format(label=label),
                uids=sorted(set(wanted)),
                database_=database,
                routing_=neo4j.RoutingControl.READ,
            )
        alive = [m for m in (directive_memory(label, r) for r in records) if m is not None]
        memories += alive
        removed += sorted(set(wanted) - {m.id for m in alive})
    return memories, removed
