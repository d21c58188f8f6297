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
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime
from typing import IO, Any
from xml.etree import ElementTree as ET

import neo4j
import neo4j.time

from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.graph_import import NODE_KEYS, write_subgraph
from turngraph.workers.graph.subgraph import GraphNode, GraphRelationship, Subgraph

__all__ = [
    "FORMAT", "FORMAT_VERSION", "Item", "decode_value", "encode_props", "encode_value",
    "import_jsonl", "ordered", "read_jsonl", "write_graphml", "write_jsonl",
]  # fmt: skip

FORMAT = "turngraph-scope"
FORMAT_VERSION = 1
Item = dict[str, Any]
"""One JSON object: a line of the file."""

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


def import_jsonl(
    driver: neo4j.Driver, database: str | None, lines: Iterable[str]
) -> tuple[int, int]:
    """Import an export; returns (nodes, relationships) written."""
    _, nodes, relationships = read_jsonl(lines)
    decoded_nodes = [
        {**node, "properties": {k: decode_value(v) for k, v in node["properties"].items()}}
        for node in nodes
    ]
    decoded_relationships = [
        {**rel, "properties": {k: decode_value(v) for k, v in rel["properties"].items()}}
        for rel in relationships
    ]
    write_subgraph(driver, database, decoded_nodes, decoded_relationships)
    return len(nodes), len(relationships)
