"""The graph after ingesting a conversation is exactly what docs/graph-model.md says."""

from __future__ import annotations

from typing import Any

import neo4j
import pytest

from tests.support.turns import turn
from turngraph.app import build_pipeline
from turngraph.clients import Clients
from turngraph.workers.graph import statements as cypher
from turngraph.workers.graph.vectors import SAVE_VECTOR_LISTS

pytestmark = pytest.mark.both_engines

CONVERSATION = [
    ("user", "The export job fails on branch feat/export, see src/export/writer.py and #31."),
    ("assistant", "decision: we use Postgres for the job store"),
    ("user", "decision: we use SQLite for the job store"),
    ("assistant", "I changed src/export/writer.py to stream rows."),
]


def _rows(clients: Clients, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = clients.graph.execute_query(query, database_=clients.graph_database, **params)
    return [record.data() for record in records]


def _ingest(clients: Clients) -> list[str]:
    events = [
        turn(text, index, role=role, minutes=index * 10)
        for index, (role, text) in enumerate(CONVERSATION)
    ]
    build_pipeline(clients).ingest(events)
    return [event.event_id for event in events]


def test_labels_relationships_and_properties(clients: Clients) -> None:
    event_ids = _ingest(clients)
    labels = {
        row["label"]
        for row in _rows(clients, "MATCH (n) UNWIND labels(n) AS label RETURN DISTINCT label")
    }
    assert labels == {
        "TurngraphGraph",  # the graph's identity (workers/graph/identity.py)
        "Workspace",
        "Session",
        "Episode",
        "Branch",
        "File",
        "Issue",
        "Decision",
        "Service",
    }
    rel_types = {
        row["t"] for row in _rows(clients, "MATCH ()-[r]->() RETURN DISTINCT type(r) AS t")
    }
    assert rel_types == {
        "IN_WORKSPACE",
        "IN_SESSION",
        "NEXT",
        "MENTIONS",
        "APPLIES_TO",
        "SUPERSEDES",
    }
    episodes = _rows(
        clients,
        "MATCH (e:Episode)-[:IN_SESSION]->(s:Session)-[:IN_WORKSPACE]->(w:Workspace) "
        "RETURN e.event_id AS id, e.turn_index AS i, e.session_id AS s, e.workspace AS w, "
        "e.user AS u, e.role AS role, e.occurred_at AS at, s.key AS skey, w.key AS wkey "
        "ORDER BY i",
    )
    assert [e["id"] for e in episodes] == event_ids
    assert {(e["s"], e["w"], e["u"], e["skey"], e["wkey"]) for e in episodes} == {
        ("s1", "w1", "u1", "s1", "w1")
    }
    assert episodes[0]["at"] == "2026-11-01T09:00:00.000000Z"
    chain = _rows(
        clients,
        "MATCH (a:Episode)-[:NEXT]->(b:Episode) "
        "RETURN a.turn_index AS a, b.turn_index AS b ORDER BY a",
    )
    assert [(c["a"], c["b"]) for c in chain] == [(0, 1), (1, 2), (2, 3)]


def test_entities_carry_scope_provenance_and_mention_counts(clients: Clients) -> None:
    event_ids = _ingest(clients)
    files = _rows(
        clients,
        "MATCH (f:File) RETURN f.uid AS uid, f.name AS name, f.scope AS scope,"
        " f.scope_key AS key, f.mentions AS mentions, f.first_episode_id AS first,"
        " f.episode_ids AS listed, COUNT { (:Episode)-[:MENTIONS]->(f) } AS links",
    )
    assert files == [
        {
            "uid": "w1|File|src/export/writer.py",
            "name": "src/export/writer.py",
            "scope": "workspace",
            "key": "w1",
            "mentions": 2,
            "first": event_ids[0],
            "listed": None,  # no list rewritten at each mention: the MENTIONS are it
            "links": 2,
        }
    ]
    stating = _rows(
        clients,
        "MATCH (e:Episode)-[:MENTIONS]->(f:File) RETURN e.event_id AS id ORDER BY id",
    )
    assert [r["id"] for r in stating] == sorted([event_ids[0], event_ids[3]])


def test_new_decision_supersedes_the_old_one(clients: Clients) -> None:
    event_ids = _ingest(clients)
    decisions = _rows(
        clients,
        "MATCH (d:Decision) RETURN d.name AS name, d.status AS status, d.subject AS subject, "
        "d.valid_at AS valid_at, d.invalid_at AS invalid_at ORDER BY d.valid_at",
    )
    old, new = decisions
    assert old["status"] == "Superseded" and new["status"] == "Active"
    assert old["subject"] == new["subject"] == "job store"
    assert old["invalid_at"] == new["valid_at"]
    links = _rows(
        clients,
        "MATCH (n:Decision)-[s:SUPERSEDES]->(o:Decision) "
        "RETURN n.name AS new, o.name AS old, s.episode_ids AS eps",
    )
    assert links == [{"new": new["name"], "old": old["name"], "eps": [event_ids[2]]}]
    facts = _rows(
        clients,
        "MATCH (d:Decision)-[f:APPLIES_TO]->(s:Service) "
        "RETURN s.name AS target, f.episode_ids AS eps ORDER BY target",
    )
    assert [f["target"] for f in facts] == ["PostgreSQL", "SQLite"]
    assert all(len(f["eps"]) == 1 for f in facts)


def test_reingesting_changes_nothing(clients: Clients) -> None:
    _ingest(clients)
    snapshot = "MATCH (n) OPTIONAL MATCH (n)-[r]->() RETURN count(DISTINCT n) AS n, count(r) AS r"
    before = _rows(clients, snapshot)
    mentions_before = _rows(clients, "MATCH (n:File) RETURN n.mentions AS m")
    _ingest(clients)
    assert _rows(clients, snapshot) == before
    assert _rows(clients, "MATCH (n:File) RETURN n.mentions AS m") == mentions_before


def test_decision_arriving_late_is_superseded_on_arrival(clients: Clients) -> None:
    pipeline = build_pipeline(clients)
    newer = turn("decision: we use SQLite for the job store", 5, minutes=50)
    older = turn("decision: we use Postgres for the job store", 1, minutes=10)
    pipeline.ingest([newer])
    pipeline.ingest([older])
    rows = _rows(
        clients, "MATCH (d:Decision) RETURN d.name AS name, d.status AS status ORDER BY d.valid_at"
    )
    assert [r["status"] for r in rows] == ["Superseded", "Active"]
    links = _rows(
        clients,
        "MATCH (n:Decision)-[:SUPERSEDES]->(o:Decision) RETURN n.name AS new, o.name AS old",
    )
    assert links == [{"new": rows[1]["name"], "old": rows[0]["name"]}]


def test_turns_of_a_forgotten_scope_never_land(clients: Clients) -> None:
    from turngraph.workers.tombstones import mark_forgotten

    pipeline = build_pipeline(clients)
    mark_forgotten(clients.redis, "session", "s-gone")
    result = pipeline.ingest(
        [turn("late turn of a forgotten session", 0, session="s-gone"), turn("kept turn", 1)]
    )
    assert result.turns == 1 and result.forgotten == 1
    rows = _rows(clients, "MATCH (e:Episode) RETURN e.session_id AS s")
    assert rows == [{"s": "s1"}]


def test_on_neo4j_every_write_keeps_its_plan(
    clients: Clients, graph_engine: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    sent: list[str] = []
    run = neo4j.ManagedTransaction.run

    def recorded(tx: neo4j.ManagedTransaction, query: Any, *args: Any, **kwargs: Any) -> Any:
        sent.append(str(query))
        return run(tx, query, *args, **kwargs)

    monkeypatch.setattr(neo4j.ManagedTransaction, "run", recorded)
    _ingest(clients)  # two decisions on one subject: the second supersedes the first

    kept = [text for text in sent if text.startswith(cypher.KEEP_PLAN)]
    if graph_engine == "arcadedb":
        assert not kept  # ArcadeDB is sent no Neo4j query option
        return
    assert cypher.KEEP_PLAN + cypher.UPSERT_EPISODES in kept
    assert cypher.KEEP_PLAN + SAVE_VECTOR_LISTS in kept  # the turns' vectors, by event id
    assert any("MERGE (n:Decision {uid: r.uid})" in text for text in kept)
    batch_statements = [text for text in sent if "UNWIND $" in text]
    assert batch_statements and all(text in kept for text in batch_statements)  # none replanned
    # those that would choose between indexes (the chain's turn_key, a decision's scope key
    # or subject) name the index of each node
    for statement in (
        cypher.LINK_EPISODE_CHAIN_READING_PREVIOUS,
        cypher.SUPERSEDE_DECISIONS,
        cypher.SUPERSEDE_LATE_ARRIVALS,
    ):
        assert cypher.NEO4J_PINNED[statement] in kept
    assert "USING INDEX old:Decision(subject)" in cypher.NEO4J_PINNED[cypher.SUPERSEDE_DECISIONS]
