"""The Neo4j-only statements on both engines: created by a worker's start on a real Neo4j
(and queryable there), never applied on the embedded engine, which rejects each."""

from __future__ import annotations

import subprocess
import sys

import neo4j
import numpy as np
import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.maintenance import service_env
from turngraph.app import build_embedder
from turngraph.clients import Clients, build_clients
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.workers.graph.neo4j_only import (
    Neo4jOnlyStatement,
    apply_neo4j_only,
    neo4j_only_statements,
    server_is_neo4j,
)
from turngraph.workers.graph.vectors import GraphVectors, unpack

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]

STATEMENTS = neo4j_only_statements(ONTOLOGY.labels(), ONTOLOGY.relationship_types())


def index_names(clients: Clients) -> set[str]:
    records, _, _ = clients.graph.execute_query(
        "SHOW INDEXES YIELD name RETURN name", database_=clients.graph_database
    )
    return {r["name"] for r in records}


def test_only_a_real_neo4j_is_taken_for_neo4j(clients: Clients, graph_engine: str) -> None:
    # ArcadeDB answers dbms.components() exactly like Neo4j; the Bolt agent gives it away.
    records, _, _ = clients.graph.execute_query(
        "CALL dbms.components() YIELD name RETURN name", database_=clients.graph_database
    )
    assert [r["name"] for r in records] == ["Neo4j Kernel"]
    assert server_is_neo4j(clients.graph, clients.graph_database) is (graph_engine == "neo4j")


def test_a_worker_start_creates_them_on_neo4j_only(clients: Clients, graph_engine: str) -> None:
    embedder = build_embedder(clients.settings)
    assert embedder is not None
    wanted = neo4j_only_statements(
        ONTOLOGY.labels(), ONTOLOGY.relationship_types(), embedder.dimension
    )
    before = index_names(clients)

    ingest(clients, CONVERSATION)  # builds the ingest pipeline: the worker's start

    after = index_names(clients)
    if graph_engine == "neo4j":
        assert {s.name for s in wanted} <= after
        assert f"episode_embedding_{embedder.dimension}" in after
        records, _, _ = clients.graph.execute_query(
            "SHOW INDEXES YIELD name, type, state WHERE type IN ['FULLTEXT', 'VECTOR'] "
            "RETURN name, type, state",
            database_=clients.graph_database,
        )
        assert {r["name"]: r["type"] for r in records} == {
            s.name: "VECTOR" if "VECTOR" in s.cypher else "FULLTEXT" for s in wanted
        }
        records, _, _ = clients.graph.execute_query(
            "SHOW VECTOR INDEXES YIELD options RETURN options.indexConfig AS config",
            database_=clients.graph_database,
        )
        [config] = [r["config"] for r in records]  # built as VECTOR_BUILD_OPTIONS says
        assert config["vector.hnsw.ef_construction"] == 32
        assert config["vector.quantization.enabled"] is False
    else:
        assert not {s.name for s in wanted} & (after | before)


def test_the_entity_index_answers_on_neo4j(clients: Clients, graph_engine: str) -> None:
    if graph_engine != "neo4j":
        assert apply_neo4j_only(clients.graph, STATEMENTS, clients.graph_database) == []
        return
    ingest(clients, CONVERSATION)
    clients.graph.execute_query("CALL db.awaitIndexes(120)", database_=clients.graph_database)
    # the full-text indexes are eventually consistent (neo4j_only.py): wait for the refresh
    clients.graph.execute_query(
        "CALL db.index.fulltext.awaitEventuallyConsistentIndexRefresh()",
        database_=clients.graph_database,
    )

    entities, _, _ = clients.graph.execute_query(
        "CALL db.index.fulltext.queryNodes('entity_names', 'upload.py') YIELD node "
        "RETURN node.name AS name",
        database_=clients.graph_database,
    )
    assert "src/upload.py" in {r["name"] for r in entities}


def test_turn_vectors_are_stored_as_a_list_too_on_neo4j(
    clients: Clients, graph_engine: str
) -> None:
    ingest(clients, CONVERSATION)
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.embedding AS listed, e.embedding_f32 AS packed, "
        "e.embedding_dim AS dim, e.embedding_model AS model",
        database_=clients.graph_database,
    )
    assert len(records) == len(CONVERSATION)
    for record in records:
        vector = unpack(record["packed"])
        assert vector is not None and record["model"] and record["dim"] == len(vector)
        if graph_engine == "neo4j":  # the list the vector index reads, the same numbers
            assert record["listed"] == pytest.approx(vector.tolist(), abs=1e-6)
        else:
            assert record["listed"] is None


def test_on_neo4j_the_listed_vector_holds_32_bit_floats(
    clients: Clients, graph_engine: str
) -> None:
    # The model's own precision: half the bytes of Bolt's 64-bit floats, which every commit
    # writes, logs and reads back for the vector index.
    if graph_engine != "neo4j":
        pytest.skip("the list is Neo4j's (its vector index)")
    ingest(clients, CONVERSATION[:1])
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.event_id AS id", database_=clients.graph_database
    )
    event_id = records[0]["id"]
    vectors = GraphVectors(clients.graph, clients.graph_database, lists=True)

    vectors.save("test-model", {event_id: [0.1] * 640})

    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode {event_id: $id}) RETURN e.embedding AS listed",
        id=event_id,
        database_=clients.graph_database,
    )
    assert records[0]["listed"] == [float(np.float32(0.1))] * 640  # not 0.1


@pytest.mark.parametrize("statement", STATEMENTS, ids=lambda s: s.name)
def test_each_statement_runs_on_neo4j_only(
    clients: Clients, graph_engine: str, statement: Neo4jOnlyStatement
) -> None:
    # If the embedded engine ever accepts one, it belongs with the portable schema instead.
    if graph_engine == "neo4j":
        clients.graph.execute_query(statement.cypher, database_=clients.graph_database)
        assert statement.name in index_names(clients)
        return
    with pytest.raises(neo4j.exceptions.Neo4jError):
        clients.graph.execute_query(statement.cypher, database_=clients.graph_database)


def _vector_indexes(clients: Clients) -> set[str]:
    return _browser_indexes(clients, ("VECTOR",))


def _browser_indexes(clients: Clients, types: tuple[str, ...] = ("VECTOR", "FULLTEXT")) -> set[str]:
    records, _, _ = clients.graph.execute_query(
        "SHOW INDEXES YIELD name, type WHERE type IN $types RETURN name",
        types=list(types),
        database_=clients.graph_database,
    )
    return {r["name"] for r in records}


def _ingest_choosing(clients: Clients, choice: str, dropped: tuple[str, ...]) -> None:
    """Drop the ``dropped`` kinds of index (earlier tests' workers made them on this server;
    later ones make them again), then ingest with ``TURNGRAPH_NEO4J_BROWSER_INDEXES=choice``."""
    for name in _browser_indexes(clients, dropped):
        clients.graph.execute_query(f"DROP INDEX {name}", database_=clients.graph_database)
    chosen = build_clients(clients.settings.model_copy(update={"neo4j_browser_indexes": choice}))
    try:
        ingest(chosen, CONVERSATION)
    finally:
        chosen.close()


def _listed(clients: Clients) -> dict[str, bool]:
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) WHERE e.embedding_f32 IS NOT NULL "
        "RETURN e.event_id AS id, e.embedding IS NOT NULL AS listed",
        database_=clients.graph_database,
    )
    return {r["id"]: r["listed"] for r in records}


def test_text_only_browser_indexes_keep_no_vector_list_then_rebuild_lists_them(
    clients: Clients, graph_engine: str
) -> None:
    # The vector index and its lists cost Neo4j CPU per turn; an operator who searches
    # Browser by words only turns them off, and turning them on later lists what was
    # stored meanwhile (`turngraph embeddings rebuild`), so the index holds every turn.
    if graph_engine != "neo4j":
        pytest.skip("the lists and the vector index are Neo4j's")
    _ingest_choosing(clients, "text", dropped=("VECTOR",))

    assert _vector_indexes(clients) == set()
    assert {"episode_text", "entity_names"} <= index_names(clients)
    listed = _listed(clients)
    assert len(listed) == len(CONVERSATION) and not any(listed.values())

    env = service_env(clients.settings, TURNGRAPH_NEO4J_BROWSER_INDEXES="all")
    done = subprocess.run(
        [sys.executable, "-m", "turngraph.cli", "embeddings", "rebuild"],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{len(CONVERSATION)} stored vector(s) listed" in done.stdout
    assert all(_listed(clients).values())
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.embedding AS listed, e.embedding_f32 AS packed",
        database_=clients.graph_database,
    )
    for record in records:  # the list is the stored vector's own numbers
        assert record["listed"] == pytest.approx(unpack(record["packed"]).tolist(), abs=1e-6)


def test_no_browser_indexes_still_store_every_turn_on_neo4j(
    clients: Clients, graph_engine: str
) -> None:
    # Recall never reads the Browser indexes: without them every turn is stored as before.
    if graph_engine != "neo4j":
        pytest.skip("the Browser indexes are Neo4j's")
    _ingest_choosing(clients, "none", dropped=("VECTOR", "FULLTEXT"))

    assert _browser_indexes(clients) == set()
    listed = _listed(clients)
    assert len(listed) == len(CONVERSATION) and not any(listed.values())
