"""Telling a real Neo4j from a Bolt-compatible server, without a server."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from turngraph.workers.graph.neo4j_only import (
    FULLTEXT_OPTIONS,
    apply_neo4j_only,
    fulltext_node_index,
    neo4j_only_statements,
    quote_identifier,
    server_is_neo4j,
)


@dataclass
class ServerInfo:
    agent: str


class FakeDriver:
    """Answers like a server with the given Bolt agent and dbms.components() row."""

    def __init__(self, agent: str, kernel: str = "Neo4j Kernel", version: str = "5.26.0"):
        self.agent = agent
        self.components = [{"name": kernel, "versions": [version], "edition": "community"}]
        self.ran: list[str] = []

    def get_server_info(self) -> ServerInfo:
        return ServerInfo(self.agent)

    def execute_query(self, query: str, **_: Any) -> tuple[list[dict[str, Any]], None, list[str]]:
        self.ran.append(query)
        if "dbms.components" in query:
            return self.components, None, ["name", "versions"]
        return [], None, []

    def session(self, **_: Any) -> FakeSession:
        return FakeSession(self.ran)


class FakeSession:
    """A session whose auto-commit queries are recorded in the driver's list."""

    def __init__(self, ran: list[str]) -> None:
        self.ran = ran

    def __enter__(self) -> FakeSession:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def run(self, query: str) -> FakeSession:
        self.ran.append(query)
        return self

    def consume(self) -> None:
        return None


@pytest.mark.parametrize(
    ("agent", "version", "expected"),
    [
        ("Neo4j/5.26.0", "5.26.0", True),
        ("Neo4j/5.27-aura", "5.27-aura", True),
        ("Neo4j/2025.01.0", "2025.01.0", True),
        ("Neo4j/4.4.30", "4.4.30", False),
        ("Neo4j/5.26.0 compatible (ArcadeDB 26.10.2)", "5.26.0", False),
        ("Neo4j/v5.11.0 compatible graph database server - Memgraph", "5.11.0", False),
    ],
)
def test_server_is_neo4j(agent: str, version: str, expected: bool) -> None:
    assert server_is_neo4j(FakeDriver(agent, version=version)) is expected  # type: ignore[arg-type]


def test_applies_every_statement_on_neo4j_only() -> None:
    statements = neo4j_only_statements(["File", "Decision"], ["SUPERSEDES"])
    neo4j, other = FakeDriver("Neo4j/5.26.0"), FakeDriver("Neo4j/5.26.0 compatible (X 1)")

    assert apply_neo4j_only(neo4j, statements) == [s.name for s in statements]  # type: ignore[arg-type]
    assert apply_neo4j_only(other, statements) == []  # type: ignore[arg-type]
    assert [q for q in neo4j.ran if "FULLTEXT" in q] == [s.cypher for s in statements]
    assert not [q for q in other.ran if "FULLTEXT" in q]


def test_identifiers_are_quoted_only_when_needed() -> None:
    assert quote_identifier("Decision") == "Decision"
    assert quote_identifier("odd label") == "`odd label`"
    assert quote_identifier("a`b") == "`a``b`"
    assert fulltext_node_index("t", ["B", "A", "B"], ["name"]) == (
        "CREATE FULLTEXT INDEX t IF NOT EXISTS FOR (n:A|B) ON EACH [n.name]" + FULLTEXT_OPTIONS
    )


def test_full_text_indexes_are_updated_off_the_commit_path() -> None:
    # a transactionally consistent full-text index is updated in every commit: it was
    # ~1 ms of Neo4j's CPU per ingested turn (bench/profiles/graph_neo4j_statements_before.txt)
    statements = neo4j_only_statements(["File"], ["SUPERSEDES"])
    fulltext = [s.cypher for s in statements if "FULLTEXT" in s.cypher]
    assert len(fulltext) == 4
    assert all(
        q.endswith("OPTIONS {indexConfig: {`fulltext.eventually_consistent`: true}}")
        for q in fulltext
    )


def test_a_vector_index_over_stored_turn_vectors_when_the_dimension_is_known() -> None:
    without = neo4j_only_statements(["File"], ["SUPERSEDES"])
    assert not [s for s in without if "VECTOR" in s.cypher]
    [vector] = [
        s for s in neo4j_only_statements(["File"], ["SUPERSEDES"], 384) if "VECTOR" in s.cypher
    ]
    assert vector.name == "episode_embedding_384"
    assert vector.cypher == (
        "CREATE VECTOR INDEX episode_embedding_384 IF NOT EXISTS FOR (n:Episode) ON "
        "(n.embedding) OPTIONS {indexConfig: {`vector.dimensions`: 384, "
        "`vector.similarity_function`: 'cosine', `vector.hnsw.ef_construction`: 32, "
        "`vector.quantization.enabled`: false}}"
    )
