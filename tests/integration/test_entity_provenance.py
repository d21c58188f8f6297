"""An entity's provenance is its MENTIONS; a graph whose entities kept a provenance list
(``episode_ids``, every version before) is moved once, at a worker's start, and reads,
forgets and imports the same before and after (workers/graph/entity_provenance.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.turns import turn
from turngraph.app import build_graph_store, build_pipeline, load_ontology
from turngraph.clients import Clients
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.entity_provenance import move_entity_provenance
from turngraph.workers.graph.graph_import import write_subgraph
from turngraph.workers.graph.scope_deletion import delete_scope

pytestmark = pytest.mark.both_engines

CONVERSATION = [
    ("s1", "decision: we use Postgres for the job store, see src/store.py"),
    ("s1", "I changed src/store.py and src/export.py to stream rows."),
    ("s2", "decision: we use Postgres for the job store, see src/store.py"),
]

AS_BEFORE = """
MATCH (n) WHERE n.first_episode_id IS NOT NULL
OPTIONAL MATCH (e:Episode)-[:MENTIONS]->(n)
WITH n, e ORDER BY e.occurred_at
WITH n, collect(e.event_id) AS stating
SET n.episode_ids = [n.first_episode_id] + [x IN stating WHERE x <> n.first_episode_id]
REMOVE n.first_episode_id
"""
"""The graph as the last version left it: each entity's list, the turn that made it first."""


def _rows(clients: Clients, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = clients.graph.execute_query(query, database_=clients.graph_database, **params)
    return [record.data() for record in records]


def _labels(clients: Clients) -> frozenset[str]:
    return frozenset(load_ontology(clients.settings).labels())


def _ingest_as_before(clients: Clients) -> list[str]:
    events = [
        turn(text, index, session=session, minutes=index * 10)
        for index, (session, text) in enumerate(CONVERSATION)
    ]
    build_pipeline(clients).ingest(events)
    _rows(clients, AS_BEFORE)
    _rows(clients, "MATCH (g:TurngraphGraph) REMOVE g.entity_provenance")
    return [event.event_id for event in events]


def _provenance(clients: Clients) -> dict[str, tuple[Any, Any, int]]:
    rows = _rows(
        clients,
        "MATCH (n) WHERE n.mentions IS NOT NULL RETURN n.uid AS uid, "
        "n.first_episode_id AS first, n.episode_ids AS listed, n.mentions AS mentions",
    )
    return {r["uid"]: (r["first"], r["listed"], r["mentions"]) for r in rows}


def test_a_new_graph_keeps_no_list_and_is_marked(clients: Clients) -> None:
    build_pipeline(clients).ingest([turn("see src/store.py", 0)])
    [store] = _provenance(clients).values()
    assert store[1] is None and store[2] == 1
    assert _rows(clients, "MATCH (g:TurngraphGraph) RETURN g.entity_provenance AS form") == [
        {"form": "mentions"}
    ]
    assert move_entity_provenance(clients.graph, clients.graph_database, _labels(clients)) == 0


def _recallable(clients: Clients) -> list[tuple[str, tuple[str, ...], tuple[str, ...]]]:
    """What a recall replica's bootstrap reads (it never moves the lists)."""
    store = build_graph_store(
        clients, load_ontology(clients.settings), previous_turns=False, on_neo4j=False
    )
    return sorted((m.id, m.source_event_ids, m.entities) for m in store.recallable_memories())


def test_a_worker_start_moves_the_lists_once(clients: Clients) -> None:
    event_ids = _ingest_as_before(clients)
    before = _provenance(clients)
    assert before and all(listed and first is None for first, listed, _ in before.values())
    recallable = _recallable(clients)

    build_pipeline(clients)  # a worker's start
    after = _provenance(clients)
    assert after.keys() == before.keys()
    for uid, (first, listed, mentions) in after.items():
        assert listed is None
        assert first == before[uid][1][0]
        assert mentions == before[uid][2]
    store_uid = next(uid for uid in after if uid.endswith("|File|src/store.py"))
    assert after[store_uid] == (event_ids[0], None, 3)
    assert move_entity_provenance(clients.graph, clients.graph_database, _labels(clients)) == 0
    # a replica reads the same memories from the lists as from the MENTIONS
    assert _recallable(clients) == recallable
    decisions = [r for r in recallable if "|Decision|" in r[0]]
    assert decisions and all(r[1][0] == event_ids[0] for r in decisions)
    assert any(set(r[1]) == {event_ids[0], event_ids[2]} for r in decisions), decisions


def test_forgetting_in_a_graph_not_yet_moved_leaves_no_list(clients: Clients) -> None:
    event_ids = _ingest_as_before(clients)
    delete_scope(clients.graph, clients.graph_database, Scope.SESSION, "s1", _labels(clients))
    [(first, listed, mentions)] = [
        v for uid, v in _provenance(clients).items() if uid.endswith("|File|src/store.py")
    ]
    # s1's turns made it and mentioned it twice: s2's turn is what stays
    assert (first, listed, mentions) == (event_ids[2], None, 1)
    assert not _rows(
        clients, "MATCH (n) WHERE n.uid ENDS WITH '|File|src/export.py' RETURN n.uid AS uid"
    )


def test_an_export_from_before_imports_without_its_list(clients: Clients) -> None:
    node = {
        "id": "a",
        "labels": ["File"],
        "properties": {
            "uid": "w9|File|src/old.py",
            "name": "src/old.py",
            "mentions": 2,
            "episode_ids": ["e-first", "e-later"],
        },
    }
    write_subgraph(clients.graph, clients.graph_database, [node], [])
    assert _provenance(clients) == {"w9|File|src/old.py": ("e-first", None, 2)}
