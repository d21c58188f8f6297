"""Writing an exported scope back into the graph (``turngraph graph import``).

Nodes are merged on their unique key (``uid``, ``event_id``, ``key``; created when they
have none) and relationships on their ends and type; both get the file's properties, so
importing twice changes nothing. Labels, keys and types are formatted into the statements
only through :func:`workers.graph.neo4j_only.quote_identifier`.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import neo4j

from turngraph.schemas.errors import InvalidPayloadError
from turngraph.workers.graph.neo4j_only import quote_identifier
from turngraph.workers.graph.retry import run_write

__all__ = [
    "CREATE_NODES", "IMPORT_BATCH", "MERGE_NODES", "MERGE_RELATIONSHIPS", "NODE_KEYS", "Item",
    "current_properties", "write_subgraph",
]  # fmt: skip

IMPORT_BATCH = 500
"""Rows per write transaction on import."""

NODE_KEYS: tuple[str, ...] = ("uid", "event_id", "key")
"""Unique properties a node is merged on, in order of preference (see the graph schema)."""

Item = dict[str, Any]
"""A node or relationship as the export file has it (properties decoded), or a row sent."""

# Statements: labels, key and type are formatted in, always through quote_identifier.
CREATE_NODES = """
UNWIND $rows AS r CREATE (n{labels}) SET n = r.props
RETURN r.id AS id, elementId(n) AS eid
"""
MERGE_NODES = """
UNWIND $rows AS r MERGE (n{labels} {{{key}: r.key}}) SET n = r.props
RETURN r.id AS id, elementId(n) AS eid
"""
MERGE_RELATIONSHIPS = """
UNWIND $rows AS r
MATCH (a) WHERE elementId(a) = r.s
MATCH (b) WHERE elementId(b) = r.t
MERGE (a)-[x:{rel_type}]->(b) SET x = r.props
RETURN count(x) AS written
"""


def write_subgraph(
    driver: neo4j.Driver, database: str | None, nodes: Sequence[Item], relationships: Sequence[Item]
) -> None:
    """Write ``nodes`` (``id``, ``labels``, ``properties``) and ``relationships`` (``id``,
    ``type``, ``start``, ``end``, ``properties``: ids local to the file)."""
    groups: dict[tuple[tuple[str, ...], str | None], list[Item]] = defaultdict(list)
    for node in nodes:
        props = current_properties(node["properties"])
        merge_key = next((k for k in NODE_KEYS if k in props), None)
        row = {"id": node["id"], "key": props.get(merge_key) if merge_key else None,
               "props": props}  # fmt: skip
        groups[(tuple(node["labels"]), merge_key)].append(row)
    engine_ids: dict[str, str] = {}
    for (labels, merge_key), rows in groups.items():
        statement = _node_statement(labels, merge_key)
        for batch in _batches(rows):
            for record in run_write(driver, database, _returning(statement, batch)):
                engine_ids[record["id"]] = record["eid"]
    by_type: dict[str, list[Item]] = defaultdict(list)
    for rel in relationships:
        try:
            ends = {"s": engine_ids[rel["start"]], "t": engine_ids[rel["end"]]}
        except KeyError as exc:
            raise InvalidPayloadError(f"relationship {rel.get('id')} names no node") from exc
        by_type[rel["type"]].append({**ends, "props": rel["properties"]})
    for rel_type, rows in by_type.items():
        statement = MERGE_RELATIONSHIPS.format(rel_type=quote_identifier(rel_type))
        for batch in _batches(rows):
            run_write(driver, database, _returning(statement, batch))


def current_properties(props: dict[str, Any]) -> dict[str, Any]:
    """A node's properties as this version writes them: an entity exported (or copied)
    from a graph that kept a provenance list on each entity keeps the list's first id as
    ``first_episode_id`` and drops the list; its ``MENTIONS`` come with the file
    (:mod:`workers.graph.entity_provenance`)."""
    listed = props.get("episode_ids")
    if "uid" not in props or not isinstance(listed, list):
        return props
    current = {k: v for k, v in props.items() if k != "episode_ids"}
    if listed and "first_episode_id" not in current:
        current["first_episode_id"] = listed[0]
    return current


def _batches(rows: Sequence[Item]) -> Iterator[list[Item]]:
    for start in range(0, len(rows), IMPORT_BATCH):
        yield list(rows[start : start + IMPORT_BATCH])


def _returning(
    statement: str, rows: list[Item]
) -> Callable[[neo4j.ManagedTransaction], list[Item]]:
    """A transaction function running one batch and keeping its records."""

    def work(tx: neo4j.ManagedTransaction) -> list[Item]:
        return [record.data() for record in tx.run(statement, rows=rows)]

    return work


def _node_statement(labels: Sequence[str], merge_key: str | None) -> str:
    label_text = "".join(f":{quote_identifier(label)}" for label in labels)
    if merge_key is None:
        return CREATE_NODES.format(labels=label_text)
    return MERGE_NODES.format(labels=label_text, key=quote_identifier(merge_key))
