"""The one place for statements only Neo4j 5 runs.

They serve people querying in Neo4j Browser (full-text search, nearest turns by stored
vector); recall never depends on them (SPEC §7), and they are applied only when the
server is Neo4j. Neo4j's own parser checks each (``tests/integration/
test_neo4j_only_lint.py``); the Neo4j tier runs them on a real Neo4j 5.26.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import neo4j

from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.schema import send_schema_statement

__all__ = [
    "FULLTEXT_OPTIONS", "NEO4J_KERNEL", "VECTOR_BUILD_OPTIONS", "Neo4jOnlyStatement",
    "apply_neo4j_only", "browser_statements", "fulltext_node_index",
    "fulltext_relationship_index", "lists_vectors", "neo4j_only_statements",
    "quote_identifier", "server_is_neo4j", "vector_node_index",
]  # fmt: skip

NEO4J_KERNEL = "Neo4j Kernel"
"""What ``CALL dbms.components()`` names the server. ArcadeDB gives the same answer
(``Neo4j Kernel`` 5.26.0 community), so it is necessary, not sufficient."""

_NEO4J_AGENT = re.compile(r"^Neo4j/\d+(\.\d+)*([-+][\w.\-]+)?$")
"""The Bolt agent of a real Neo4j server: ``Neo4j/5.26.0``, ``Neo4j/5.27-aura``.
Compatible servers say more (``Neo4j/5.26.0 compatible (ArcadeDB 26.10.2)``)."""

_PLAIN_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Neo4jOnlyStatement:
    """A named statement that only Neo4j runs, and why we want it there."""

    name: str
    cypher: str
    purpose: str


def quote_identifier(identifier: str) -> str:
    """Backtick a label, type, property or index name unless it is a plain identifier."""
    if _PLAIN_IDENTIFIER.match(identifier):
        return identifier
    return "`" + identifier.replace("`", "``") + "`"


def _alternatives(names: Iterable[str]) -> str:
    unique = sorted(set(names))
    if not unique:
        raise ValueError("a full-text index needs at least one label or relationship type")
    return "|".join(quote_identifier(n) for n in unique)


FULLTEXT_OPTIONS = " OPTIONS {indexConfig: {`fulltext.eventually_consistent`: true}}"
"""Full-text indexes are updated by a background thread, not inside every commit: a
transactionally consistent one cost about 1 ms of Neo4j's CPU per ingested turn (the
write's commit fell from ~1.8 to ~0.8 ms per turn). Browser's searches see a turn a
moment after its write; recall never reads these indexes."""


def fulltext_node_index(name: str, labels: Iterable[str], properties: Sequence[str]) -> str:
    """``CREATE FULLTEXT INDEX … IF NOT EXISTS`` over nodes with any of ``labels``."""
    fields = ", ".join(f"n.{quote_identifier(p)}" for p in properties)
    return (
        f"CREATE FULLTEXT INDEX {quote_identifier(name)} IF NOT EXISTS "
        f"FOR (n:{_alternatives(labels)}) ON EACH [{fields}]{FULLTEXT_OPTIONS}"
    )


def fulltext_relationship_index(name: str, types: Iterable[str], properties: Sequence[str]) -> str:
    """``CREATE FULLTEXT INDEX … IF NOT EXISTS`` over relationships of any of ``types``."""
    fields = ", ".join(f"r.{quote_identifier(p)}" for p in properties)
    return (
        f"CREATE FULLTEXT INDEX {quote_identifier(name)} IF NOT EXISTS "
        f"FOR ()-[r:{_alternatives(types)}]-() ON EACH [{fields}]{FULLTEXT_OPTIONS}"
    )


VECTOR_BUILD_OPTIONS = "`vector.hnsw.ef_construction`: 32, `vector.quantization.enabled`: false"
"""How the vector index is built (Neo4j 5.26's defaults: 100 and true). In a growing graph
about half of the server's CPU was Lucene rebuilding the index's HNSW graphs as it merged
segments, with scalar quantiles recomputed on each merge (``bench.ingest_growth --graph
neo4j --embedding local``, docs/history.md): a third of the neighbours searched per insert
and no quantized copy cut the graph's CPU per turn by ~15 %, for an index only people
in Browser search (a nearest-turns list; recall never reads it). An index made before
keeps its options until it is dropped (the next worker start makes it again)."""


def vector_node_index(name: str, label: str, prop: str, dimension: int) -> str:
    """``CREATE VECTOR INDEX … IF NOT EXISTS`` (cosine) over one label's vector property,
    built as :data:`VECTOR_BUILD_OPTIONS` says."""
    if dimension < 1:
        raise ValueError("a vector index needs a positive dimension")
    return (
        f"CREATE VECTOR INDEX {quote_identifier(name)} IF NOT EXISTS "
        f"FOR (n:{quote_identifier(label)}) ON (n.{quote_identifier(prop)}) "
        f"OPTIONS {{indexConfig: {{`vector.dimensions`: {int(dimension)}, "
        f"`vector.similarity_function`: 'cosine', {VECTOR_BUILD_OPTIONS}}}}}"
    )


def neo4j_only_statements(
    entity_labels: Iterable[str], fact_types: Iterable[str], embedding_dimension: int | None = None
) -> tuple[Neo4jOnlyStatement, ...]:
    """Every Neo4j-only statement, for the ontology's entity labels and fact types, and a
    vector index over the turns' stored embeddings when their dimension is known (named
    by it, so a model of another dimension gets its own index)."""
    entity_labels = tuple(entity_labels)
    fact_types = tuple(fact_types)
    statements = [
        Neo4jOnlyStatement(
            "episode_text",
            fulltext_node_index("episode_text", ["Episode"], ["content"]),
            "search turns by words in Browser: "
            "CALL db.index.fulltext.queryNodes('episode_text', 'retry AND backoff')",
        ),
        Neo4jOnlyStatement(
            "memory_text",
            fulltext_node_index(
                "memory_text", ["Summary", "DecisionRecord", "Memory"], ["text", "topic"]
            ),
            "search summaries, decision records and promoted memories by words",
        ),
    ]
    if entity_labels:
        statements.append(
            Neo4jOnlyStatement(
                "entity_names",
                fulltext_node_index("entity_names", entity_labels, ["name", "summary"]),
                "find entities by (part of) a name, fuzzy: 'retr~' finds retry and retries",
            )
        )
    if fact_types:
        statements.append(
            Neo4jOnlyStatement(
                "fact_statements",
                fulltext_relationship_index("fact_statements", fact_types, ["statement"]),
                "search facts by the sentence that stated them",
            )
        )
    if embedding_dimension:
        name = f"episode_embedding_{int(embedding_dimension)}"
        statements.append(
            Neo4jOnlyStatement(
                name,
                vector_node_index(name, "Episode", "embedding", embedding_dimension),
                "nearest turns to a vector in Browser: "
                f"CALL db.index.vector.queryNodes('{name}', 10, $vector)",
            )
        )
    return tuple(statements)


def browser_statements(
    choice: str,
    entity_labels: Iterable[str],
    fact_types: Iterable[str],
    embedding_dimension: int | None = None,
) -> tuple[Neo4jOnlyStatement, ...]:
    """The statements ``Settings.neo4j_browser_indexes`` asks for: ``all`` of
    :func:`neo4j_only_statements`, ``text`` without the vector index, ``none``."""
    if choice == "none":
        return ()
    vectors = embedding_dimension if choice == "all" else None
    return neo4j_only_statements(entity_labels, fact_types, vectors)


def lists_vectors(choice: str) -> bool:
    """Whether turns store their vector as a list too (what the vector index reads)."""
    return choice == "all"


def server_is_neo4j(driver: neo4j.Driver, database: str | None = None) -> bool:
    """True only for a real Neo4j 5+ server, not a Bolt-compatible one.

    ``dbms.components()`` alone cannot tell (ArcadeDB answers ``Neo4j Kernel``), so the
    Bolt agent string must be Neo4j's own as well.
    """
    agent = driver.get_server_info().agent
    if not _NEO4J_AGENT.match(agent):
        return False
    records, _, _ = driver.execute_query(
        "CALL dbms.components() YIELD name, versions RETURN name, versions",
        database_=database,
        routing_=neo4j.RoutingControl.READ,
    )
    for record in records:
        if record["name"] != NEO4J_KERNEL:
            continue
        major = str(record["versions"][0]).split(".", 1)[0]
        return major.isdigit() and int(major) >= 5
    return False


def apply_neo4j_only(
    driver: neo4j.Driver, statements: Sequence[Neo4jOnlyStatement], database: str | None = None
) -> list[str]:
    """Run ``statements`` if the server is Neo4j; the names applied (none elsewhere).

    Idempotent (``IF NOT EXISTS``): safe at every worker start.
    """
    with graph_errors("set up the Neo4j-only indexes"):
        if not server_is_neo4j(driver, database):
            return []
        for statement in statements:  # workers starting together race: see the function
            send_schema_statement(driver, database, statement.cypher)
    return [s.name for s in statements]
