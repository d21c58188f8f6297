"""Moving a graph's entities off their provenance lists (once per graph, at a worker's start).

An entity's provenance is its ``MENTIONS`` relationships; it keeps their count
(``mentions``) and the turn that made it (``first_episode_id``). Graphs written before
kept an ``episode_ids`` list on each entity as well, rewritten whole at every mention
(docs/graph-model.md, "Provenance"). :func:`move_entity_provenance` turns such a graph's
lists into ``first_episode_id`` (the list's first id) and drops them, in batches, then
marks the graph's identity node so later starts skip it: every graph is checked once,
a new one too (whose entity labels it finds empty), so no graph is marked unchecked.
Idempotent and safe from workers starting together: each batch sets what the list says
and removes it, so a batch run twice finds nothing the second time.
"""

from __future__ import annotations

from collections.abc import Iterable

import neo4j

from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.identity import IDENTITY_LABEL
from turngraph.workers.graph.keys import checked_label
from turngraph.workers.graph.retry import run_write

__all__ = [
    "LISTED_ENTITIES", "MARK_MOVED", "MOVE_BATCH", "MOVE_LISTS", "PROVENANCE_FORM",
    "PROVENANCE_MOVED", "move_entity_provenance",
]  # fmt: skip

MOVE_BATCH = 1_000
"""Entities per write transaction."""

PROVENANCE_FORM = "mentions"
"""The identity node's ``entity_provenance`` once the graph's entities keep no list
(their ``MENTIONS`` are their provenance)."""

PROVENANCE_MOVED = f"""
MATCH (g:{IDENTITY_LABEL} {{key: 'identity'}})
RETURN g.entity_provenance = $form AS moved
"""

LISTED_ENTITIES = "MATCH (n:{label}) WHERE n.episode_ids IS NOT NULL RETURN elementId(n) AS id"

MOVE_LISTS = """
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id AND n.episode_ids IS NOT NULL
SET n.first_episode_id = coalesce(n.first_episode_id, n.episode_ids[0]), n.episode_ids = null
RETURN count(n) AS moved
"""

MARK_MOVED = f"""
MATCH (g:{IDENTITY_LABEL} {{key: 'identity'}})
SET g.entity_provenance = $form
"""


def move_entity_provenance(
    driver: neo4j.Driver, database: str | None, entity_labels: Iterable[str]
) -> int:
    """Move the provenance lists of the graph's entities (see the module docstring);
    returns how many entities had one (0 once the graph is marked)."""
    read = neo4j.RoutingControl.READ
    with graph_errors("check the entities' provenance"):
        records, _, _ = driver.execute_query(
            PROVENANCE_MOVED, form=PROVENANCE_FORM, database_=database, routing_=read
        )
        if records and records[0]["moved"]:
            return 0
        listed: list[str] = []
        for label in sorted(set(entity_labels)):
            query = LISTED_ENTITIES.format(label=checked_label(label))
            found, _, _ = driver.execute_query(query, database_=database, routing_=read)
            listed += [str(r["id"]) for r in found]
    moved = 0
    for start in range(0, len(listed), MOVE_BATCH):
        batch = listed[start : start + MOVE_BATCH]

        def move(tx: neo4j.ManagedTransaction, ids: list[str] = batch) -> int:
            record = tx.run(MOVE_LISTS, ids=ids).single()
            return int(record["moved"]) if record is not None else 0

        moved += run_write(driver, database, move, action="move the entities' provenance")

    def mark(tx: neo4j.ManagedTransaction) -> None:
        tx.run(MARK_MOVED, form=PROVENANCE_FORM).consume()

    run_write(driver, database, mark, action="mark the entities' provenance moved")
    return moved
