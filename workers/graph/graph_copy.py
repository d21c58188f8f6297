"""The whole graph of one server written into another (``turngraph graph migrate``): every
node and relationship with its labels, type and properties, merged on the same unique keys
as an import (:mod:`workers.graph.graph_import`), so copying twice changes nothing.

The source's identity node is not copied: the target keeps its own identity, and the
ingested markers of the copied turns agree with it again (they are checked against the
graph, ``workers/ingest/markers.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

import neo4j

from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.graph_import import Item, write_subgraph
from turngraph.workers.graph.identity import IDENTITY_LABEL

__all__ = ["CopyReport", "copy_graph"]

READ_NODES = f"""
MATCH (n) WHERE NOT n:{IDENTITY_LABEL}
RETURN elementId(n) AS id, labels(n) AS labels, properties(n) AS props
"""

READ_RELATIONSHIPS = f"""
MATCH (a)-[r]->(b) WHERE NOT a:{IDENTITY_LABEL} AND NOT b:{IDENTITY_LABEL}
RETURN elementId(r) AS id, type(r) AS type, elementId(a) AS start, elementId(b) AS end,
       properties(r) AS props
"""


@dataclass(frozen=True)
class CopyReport:
    nodes: int
    relationships: int


def copy_graph(
    source: neo4j.Driver,
    source_database: str | None,
    target: neo4j.Driver,
    target_database: str | None,
) -> CopyReport:
    """Read everything of ``source`` (streamed), write it into ``target``."""
    read = neo4j.RoutingControl.READ
    with graph_errors("read the source graph"):
        records, _, _ = source.execute_query(READ_NODES, database_=source_database, routing_=read)
        nodes: list[Item] = [
            {"id": r["id"], "labels": list(r["labels"]), "properties": dict(r["props"])}
            for r in records
        ]
        records, _, _ = source.execute_query(
            READ_RELATIONSHIPS, database_=source_database, routing_=read
        )
        relationships: list[Item] = [
            {
                "id": r["id"],
                "type": r["type"],
                "start": r["start"],
                "end": r["end"],
                "properties": dict(r["props"]),
            }
            for r in records
        ]
    write_subgraph(target, target_database, nodes, relationships)
    return CopyReport(len(nodes), len(relationships))
