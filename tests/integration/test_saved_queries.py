"""The saved Browser queries run on a real graph and find what they promise.

They are written for Neo4j Browser and run here on a real Neo4j, all of them, the
Neo4j-only ones (full-text and vector indexes, created by the ingest worker's start)
included; all but those also run on the embedded engine. Both check them against the
graph the real ingest pipeline writes.
"""

from __future__ import annotations

import neo4j
import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.cypher_lint import REPO_ROOT, CypherText, saved_queries
from turngraph.clients import Clients

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]

QUERIES = saved_queries((REPO_ROOT / "ops" / "neo4j" / "saved-queries.cypher").read_text())
PORTABLE = [q for q in QUERIES if "Neo4j only" not in q.name]
NEO4J_ONLY = [q for q in QUERIES if "Neo4j only" in q.name]
VALUES = {
    "session_id": "s1",
    "about": "retry",
    "event_id": CONVERSATION[0].event_id,
    "path": "src/upload.py",
    "workspace": "",
    "days": 100_000,
    "name": "upload.py",
    "scope_key": "",
    "words": "retry AND backoff",
    "index": "episode_embedding_640",
}


def runnable(query: CypherText) -> str:
    lines = query.text.splitlines()
    return "\n".join(x for x in lines if not x.startswith((":param", "//"))).strip().rstrip(";")


def test_every_parameter_has_a_test_value() -> None:
    assert {p for q in QUERIES for p in q.parameters} <= set(VALUES)
    assert [q.name.split("(")[1] for q in NEO4J_ONLY] == [
        "Neo4j only: full-text index episode_text)",
        "Neo4j only: vector index episode_embedding_640)",
    ]


def run_saved(clients: Clients, query: CypherText) -> list[neo4j.Record]:
    records, _, _ = clients.graph.execute_query(
        runnable(query),
        {p: VALUES[p] for p in query.parameters},
        database_=clients.graph_database,
    )
    return records


@pytest.mark.parametrize("query", PORTABLE, ids=lambda q: q.name)
def test_saved_query_finds_something(clients: Clients, query: CypherText) -> None:
    ingest(clients, CONVERSATION, distill=True)

    assert run_saved(clients, query), f"{query.name} found nothing"


@pytest.mark.parametrize("query", NEO4J_ONLY, ids=lambda q: q.name)
def test_neo4j_only_saved_query_finds_the_turns(
    clients: Clients, graph_engine: str, query: CypherText
) -> None:
    ingest(clients, CONVERSATION)  # the worker's start creates the indexes on Neo4j
    if graph_engine != "neo4j":
        with pytest.raises(neo4j.exceptions.Neo4jError):  # no such procedure or index
            run_saved(clients, query)
        return
    clients.graph.execute_query("CALL db.awaitIndexes(120)", database_=clients.graph_database)

    records = run_saved(clients, query)

    first = CONVERSATION[0]
    assert records, f"{query.name} found nothing"
    top = records[0]
    # Both find the turn that says "retry ... exponential backoff" first: by its words, or
    # as its own nearest neighbour (cosine 1).
    assert (top["session_id"], top["turn"]) == (first.session_id, first.turn_index)


def test_decisions_show_what_superseded_them(clients: Clients) -> None:
    ingest(clients, CONVERSATION)
    query = next(q for q in QUERIES if q.name.startswith("What was decided"))

    records, _, _ = clients.graph.execute_query(
        runnable(query), about="retry", database_=clients.graph_database
    )

    rows = {r["decision"]: (r["status"], r["superseded_by"]) for r in records}
    newer = "retry uploads with a fixed delay in src/upload.py"
    assert rows == {
        newer: ("Active", None),
        "retry uploads with exponential backoff in src/upload.py": ("Superseded", newer),
    }
