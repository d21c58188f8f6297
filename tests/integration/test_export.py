"""Export a scope, import it into an empty graph: the same scope, exactly; GraphML that
other tools read."""

from __future__ import annotations

import io
import json
import math
from datetime import UTC
from xml.etree import ElementTree as ET

import neo4j.time
import pytest

import turngraph.schemas.ontology as ontology
from tests.support.conversation import CONVERSATION, ingest
from turngraph.clients import Clients
from turngraph.inspection.export import (
    decode_value,
    encode_value,
    import_jsonl,
    read_jsonl,
    write_graphml,
    write_jsonl,
)
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.subgraph import read_scope

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]

GRAPHML = "{http://graphml.graphdrawing.org/xmlns}"


def export(clients: Clients, scope: Scope, key: str) -> list[str]:
    subgraph = read_scope(clients.graph, clients.graph_database, scope, key, ontology.labels())
    out = io.StringIO()
    write_jsonl(subgraph, scope, key, out)
    return out.getvalue().splitlines()


def wipe(clients: Clients) -> None:
    clients.graph.execute_query("MATCH (n) DETACH DELETE n", database_=clients.graph_database)


def count(clients: Clients, query: str) -> int:
    records, _, _ = clients.graph.execute_query(query, database_=clients.graph_database)
    return int(records[0][0])


def body(lines: list[str]) -> list[str]:
    """Everything but the header's timestamp."""
    header = json.loads(lines[0])
    header.pop("exported_at")
    return [json.dumps(header), *lines[1:]]


@pytest.mark.parametrize(
    ("scope", "key"),
    [(Scope.SESSION, "s1"), (Scope.WORKSPACE, "w1"), (Scope.USER, "u1")],
    ids=str,
)
def test_export_then_import_into_an_empty_graph_reproduces_the_scope(
    clients: Clients, scope: Scope, key: str
) -> None:
    ingest(clients, CONVERSATION)
    # A property of every type the driver has, on a node of the scope.
    clients.graph.execute_query(
        "MATCH (e:Episode {session_id: 's1', turn_index: 0}) "
        "SET e.at = datetime('2026-11-01T09:00:00.123456Z'), e.day = date('2026-11-01'), "
        "e.ratio = 0.25, e.whole = 2.0, e.flag = false, e.counts = [1, 2, 3], "
        "e.words = ['a', 'é', '\"q\"']",
        database_=clients.graph_database,
    )
    exported = export(clients, scope, key)
    header = json.loads(exported[0])
    assert header["nodes"] > 3 and header["relationships"] > 3

    wipe(clients)
    nodes, relationships = import_jsonl(clients.graph, clients.graph_database, exported)

    assert (nodes, relationships) == (header["nodes"], header["relationships"])
    assert count(clients, "MATCH (n) RETURN count(n)") == header["nodes"]
    assert count(clients, "MATCH ()-[r]->() RETURN count(r)") == header["relationships"]
    assert body(export(clients, scope, key)) == body(exported)


def test_importing_twice_changes_nothing(clients: Clients) -> None:
    ingest(clients, CONVERSATION)
    exported = export(clients, Scope.WORKSPACE, "w1")
    wipe(clients)

    import_jsonl(clients.graph, clients.graph_database, exported)
    import_jsonl(clients.graph, clients.graph_database, exported)

    assert body(export(clients, Scope.WORKSPACE, "w1")) == body(exported)
    assert count(clients, "MATCH (n) RETURN count(n)") == json.loads(exported[0])["nodes"]


def test_graphml_declares_every_attribute_with_its_type(clients: Clients) -> None:
    ingest(clients, CONVERSATION)
    subgraph = read_scope(
        clients.graph, clients.graph_database, Scope.SESSION, "s1", ontology.labels()
    )
    out = io.StringIO()
    write_graphml(subgraph, out)

    root = ET.fromstring(out.getvalue())
    keys = {k.get("id"): k.get("attr.type") for k in root.iter(f"{GRAPHML}key")}
    nodes = list(root.iter(f"{GRAPHML}node"))
    edges = list(root.iter(f"{GRAPHML}edge"))
    assert (len(nodes), len(edges)) == (len(subgraph.nodes), len(subgraph.relationships))
    assert all(d.get("key") in keys for d in root.iter(f"{GRAPHML}data"))
    assert keys["n_turn_index"] == "long" and keys["n_content"] == "string"
    ids = {n.get("id") for n in nodes}
    assert all(e.get("source") in ids and e.get("target") in ids for e in edges)
    assert {e.get("label") for e in edges} >= {"IN_SESSION", "MENTIONS", "NEXT"}
    episode = next(n for n in nodes if n.get("labels") == ":Episode")
    assert any(d.get("key") == "n_event_id" for d in episode)


def test_values_keep_their_types() -> None:
    values = [
        neo4j.time.DateTime(2026, 11, 1, 9, 0, 0, 123456000, tzinfo=UTC),
        neo4j.time.Date(2026, 11, 1),
        neo4j.time.Duration(days=3, seconds=5),
        b"\x00\xff",
        [1.5, 2.0],
        math.inf,
    ]
    for value in values:
        assert decode_value(json.loads(json.dumps(encode_value(value)))) == value


@pytest.mark.parametrize(
    "lines",
    [
        [],
        ['{"format": "something-else", "version": 1}'],
        ['{"format": "turngraph-scope", "version": 1, "nodes": 2, "relationships": 0}',
         '{"kind": "node", "id": "n0", "labels": ["X"], "properties": {}}'],
        ['{"format": "turngraph-scope", "version": 1, "nodes": 1, "relationships": 0}',
         "{not json"],
    ],
)  # fmt: skip
def test_broken_files_get_a_clear_error(lines: list[str]) -> None:
    with pytest.raises(InvalidPayloadError):
        read_jsonl(lines)
