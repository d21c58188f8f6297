"""The saved Browser queries run on a real graph and find what they promise.

They are written for Neo4j Browser, yet all but the Neo4j-only ones (full-text search)
also run on the embedded engine: that checks them against the graph the real ingest
pipeline writes.
"""

from __future__ import annotations

import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.cypher_lint import REPO_ROOT, CypherText, saved_queries
from turngraph.clients import Clients

pytestmark = pytest.mark.integration

QUERIES = saved_queries((REPO_ROOT / "ops" / "neo4j" / "saved-queries.cypher").read_text())
PORTABLE = [q for q in QUERIES if "Neo4j only" not in q.name]
VALUES = {
    "session_id": "s1",
    "about": "retry",
    "event_id": CONVERSATION[0].event_id,
    "path": "src/upload.py",
    "workspace": "",
    "days": 100_000,
    "name": "upload.py",
    "scope_key": "",
}


def runnable(query: CypherText) -> str:
    lines = query.text.splitlines()
    return "\n".join(x for x in lines if not x.startswith((":param", "//"))).strip().rstrip(";")


def test_every_parameter_has_a_test_value() -> None:
    assert {p for q in PORTABLE for p in q.parameters} <= set(VALUES)
    assert len(PORTABLE) == len(QUERIES) - 1


@pytest.mark.parametrize("query", PORTABLE, ids=lambda q: q.name)
def test_saved_query_finds_something(clients: Clients, query: CypherText) -> None:
    ingest(clients, CONVERSATION, distill=True)

    records, _, _ = clients.graph.execute_query(
        runnable(query),
        {p: VALUES[p] for p in query.parameters},
        database_=clients.graph_database,
    )

    assert records, f"{query.name} found nothing"


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
