"""``turngraph graph export`` / ``import``: a scope as JSON lines (exact round trip) or
GraphML (for Gephi, yEd, networkx, Neo4j's APOC).

JSON lines: a header line, then one line per node, then one per relationship, in a
stable order; ids are local to the file (``n0``, ``r0``), never engine ids. Property
values keep their types: JSON's own, plus tagged objects for the temporal types
(``{"$neo4j": "DateTime", "value": "…"}``). Import merges nodes on their unique keys
(``uid``, ``event_id``, ``key``) and relationships on their ends and type, and replaces
their properties with the file's, so importing twice changes nothing.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import IO, Any
from xml.etree import ElementTree as ET

import neo4j
import neo4j.time

from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.neo4j_only import quote_identifier
from turngraph.workers.graph.retry import run_write
from turngraph.workers.graph.subgraph import GraphNode, GraphRelationship, Subgraph

FORMAT = "turngraph-scope"
FORMAT_VERSION = 1
IMPORT_BATCH = 500
"""Rows per write transaction on import."""

NODE_KEYS: tuple[str, ...] = ("uid", "event_id", "key")
"""Unique properties a node is merged on, in order of preference (see the graph schema)."""

Item = dict[str, Any]
"""One JSON object: a line of the file, or a row sent to the graph."""

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

_TEMPORAL = {
    "DateTime": neo4j.time.DateTime,
    "Date": neo4j.time.Date,
    "Time": neo4j.time.Time,
    "Duration": neo4j.time.Duration,
}


# -- values -----------------------------------------------------------------------------


def encode_value(value: Any) -> Any:
    """A property value as JSON, types kept."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return {"$neo4j": "Float", "value": repr(value)}
        return value
    for tag, kind in _TEMPORAL.items():  # before tuples: a Duration is one
        if isinstance(value, kind):
            return {"$neo4j": tag, "value": value.iso_format()}  # type: ignore[attr-defined]
    if isinstance(value, list | tuple):
        return [encode_value(v) for v in value]
    if isinstance(value, bytes | bytearray):
        return {"$neo4j": "Bytes", "value": bytes(value).hex()}
    raise InvalidPayloadError(f"cannot export a property of type {type(value).__name__}")


def decode_value(value: Any) -> Any:
    if isinstance(value, list):
        return [decode_value(v) for v in value]
    if isinstance(value, dict):
        tag, text = value.get("$neo4j"), value.get("value")
        if tag == "Float":
            return float(text)  # type: ignore[arg-type]
        if tag == "Bytes":
            return bytes.fromhex(str(text))
        if tag in _TEMPORAL:
            return _TEMPORAL[tag].from_iso_format(str(text))  # type: ignore[attr-defined]
        raise InvalidPayloadError("unknown tagged value in the import file")
    return value


# -- export -----------------------------------------------------------------------------


def _node_identity(node: GraphNode) -> tuple[str, str]:
    key = next((str(node.properties[k]) for k in NODE_KEYS if k in node.properties), "")
    return ":".join(node.labels), key


def ordered(subgraph: Subgraph) -> tuple[list[GraphNode], list[GraphRelationship], dict[str, str]]:
    """Nodes and relationships in a stable order, and engine id → file id."""
    nodes = sorted(subgraph.nodes, key=lambda n: (*_node_identity(n), json.dumps(encode_props(n))))
    local = {n.element_id: f"n{i}" for i, n in enumerate(nodes)}
    relationships = sorted(
        subgraph.relationships,
        key=lambda r: (
            int(local[r.start][1:]),
            r.type,
            int(local[r.end][1:]),
            json.dumps(encode_props(r), sort_keys=True),
        ),
    )
    return nodes, relationships, local


def encode_props(item: GraphNode | GraphRelationship) -> dict[str, Any]:
    return {k: encode_value(item.properties[k]) for k in sorted(item.properties)}


def write_jsonl(subgraph: Subgraph, scope: Scope, key: str, out: IO[str]) -> int:
    """Write the scope; returns the number of lines after the header."""
    nodes, relationships, local = ordered(subgraph)
    header = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "scope": scope.value,
        "key": key,
        "exported_at": datetime.now(UTC).isoformat(),
        "nodes": len(nodes),
        "relationships": len(relationships),
    }
    out.write(json.dumps(header) + "\n")
    for node in nodes:
        line = {
            "kind": "node",
            "id": local[node.element_id],
            "labels": list(node.labels),
            "properties": encode_props(node),
        }
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    for i, rel in enumerate(relationships):
        line = {
            "kind": "relationship",
            "id": f"r{i}",
            "type": rel.type,
            "start": local[rel.start],
            "end": local[rel.end],
            "properties": encode_props(rel),
        }
        out.write(json.dumps(line, ensure_ascii=False) + "\n")
    return len(nodes) + len(relationships)


def _graphml_type(values: Iterable[Any]) -> str:
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {bool}:
        return "boolean"
    if kinds <= {int}:
        return "long"
    if kinds <= {int, float}:
        return "double"
    return "string"


def _graphml_text(value: Any, attr_type: str) -> str:
    if attr_type == "boolean":
        return "true" if value else "false"
    if attr_type in ("long", "double"):
        return repr(value)
    if isinstance(value, str):
        return value
    return json.dumps(encode_value(value), ensure_ascii=False)


def write_graphml(subgraph: Subgraph, out: IO[str]) -> None:
    """GraphML with APOC's conventions: a ``labels`` attribute (``:A:B``) on nodes and a
    ``label`` (the type) on edges; lists and tagged values as JSON text."""
    nodes, relationships, local = ordered(subgraph)
    root = ET.Element("graphml", xmlns="http://graphml.graphdrawing.org/xmlns")
    keys: dict[tuple[str, str], str] = {}
    for kind, items, fixed in (("node", nodes, "labels"), ("edge", relationships, "label")):
        values: dict[str, list[Any]] = defaultdict(list)
        for item in items:
            for prop, value in item.properties.items():
                values[prop].append(value)
        ET.SubElement(root, "key", id=fixed, attrib={"for": kind, "attr.name": fixed,
                                                     "attr.type": "string"})  # fmt: skip
        for prop in sorted(values):
            attr_type = _graphml_type(values[prop])
            key_id = f"{kind[0]}_{prop}"
            keys[(kind, prop)] = attr_type
            ET.SubElement(root, "key", id=key_id, attrib={"for": kind, "attr.name": prop,
                                                          "attr.type": attr_type})  # fmt: skip
    graph = ET.SubElement(root, "graph", id="turngraph", edgedefault="directed")
    for node in nodes:
        labels = "".join(f":{label}" for label in node.labels)
        element = ET.SubElement(graph, "node", id=local[node.element_id], labels=labels)
        ET.SubElement(element, "data", key="labels").text = labels
        for prop in sorted(node.properties):
            data = ET.SubElement(element, "data", key=f"n_{prop}")
            data.text = _graphml_text(node.properties[prop], keys[("node", prop)])
    for i, rel in enumerate(relationships):
        element = ET.SubElement(
            graph, "edge", id=f"r{i}", source=local[rel.start], target=local[rel.end],
            label=rel.type,
        )  # fmt: skip
        ET.SubElement(element, "data", key="label").text = rel.type
        for prop in sorted(rel.properties):
            data = ET.SubElement(element, "data", key=f"e_{prop}")
            data.text = _graphml_text(rel.properties[prop], keys[("edge", prop)])
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


# -- import -----------------------------------------------------------------------------


def read_jsonl(
    lines: Iterable[str],
) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    """Header, node lines and relationship lines; a clear error for anything else."""
    iterator: Iterator[str] = iter(lines)
    try:
        header = json.loads(next(iterator))
    except (StopIteration, ValueError) as exc:
        raise InvalidPayloadError("not a turngraph export: no header line") from exc
    if header.get("format") != FORMAT or header.get("version") != FORMAT_VERSION:
        raise InvalidPayloadError(f"not a {FORMAT} v{FORMAT_VERSION} file")
    nodes: list[Item] = []
    relationships: list[Item] = []
    for number, line in enumerate(iterator, start=2):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as exc:
            raise InvalidPayloadError(f"line {number} is not JSON") from exc
        (nodes if item.get("kind") == "node" else relationships).append(item)
    if len(nodes) != header.get("nodes") or len(relationships) != header.get("relationships"):
        raise InvalidPayloadError("the file is incomplete: counts differ from its header")
    return header, nodes, relationships


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


def import_jsonl(
    driver: neo4j.Driver, database: str | None, lines: Iterable[str]
) -> tuple[int, int]:
    """Import an export; returns (nodes, relationships) written."""
    _, nodes, relationships = read_jsonl(lines)
    groups: dict[tuple[tuple[str, ...], str | None], list[Item]] = defaultdict(list)
    for node in nodes:
        props = {k: decode_value(v) for k, v in node["properties"].items()}
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
        props = {k: decode_value(v) for k, v in rel["properties"].items()}
        by_type[rel["type"]].append({**ends, "props": props})
    for rel_type, rows in by_type.items():
        statement = MERGE_RELATIONSHIPS.format(rel_type=quote_identifier(rel_type))
        for batch in _batches(rows):
            run_write(driver, database, _returning(statement, batch))
    return len(nodes), len(relationships)
