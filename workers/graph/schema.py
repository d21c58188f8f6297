"""Idempotent schema setup (``IF NOT EXISTS``), run at every worker start."""

from __future__ import annotations

import random
import re
import time
from collections.abc import Iterable

import neo4j
import neo4j.exceptions
import structlog

from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.keys import checked_label

__all__ = [
    "CREATED_BY_ANOTHER", "ENTITY_INDEXED_PROPERTIES", "FIXED_CONSTRAINTS", "FIXED_INDEXES",
    "SCHEMA_ATTEMPTS", "SCHEMA_BACKOFF_S", "ensure_schema", "existing_schema_names",
    "schema_statements", "send_schema_statement",
]  # fmt: skip

log = structlog.get_logger(__name__)

FIXED_CONSTRAINTS: tuple[tuple[str, str], ...] = (
    ("Episode", "event_id"),
    ("Session", "key"),
    ("Workspace", "key"),
    ("Summary", "uid"),
    ("DecisionRecord", "uid"),
    ("Memory", "uid"),
    ("TurngraphGraph", "key"),
)
"""(label, property) pairs that are unique regardless of the ontology."""

FIXED_INDEXES: tuple[tuple[str, str], ...] = (
    ("Episode", "session_id"),
    ("Episode", "workspace"),
    ("Episode", "user"),
    ("Episode", "turn_index"),
    ("Episode", "turn_key"),
    ("Summary", "session_id"),
    ("Summary", "scope_key"),
    ("Summary", "topic_key"),
    ("DecisionRecord", "scope_key"),
    ("DecisionRecord", "topic_key"),
    ("Memory", "scope_key"),
    ("Memory", "session_id"),
)
"""Range indexes the hot paths look up by."""

ENTITY_INDEXED_PROPERTIES = ("scope_key", "subject", "name_key")
"""Range indexes on every entity label (scope listing, supersede, lookups by name)."""


def schema_statements(entity_labels: Iterable[str]) -> list[str]:
    statements = [
        f"CREATE CONSTRAINT {label.lower()}_{prop} IF NOT EXISTS "
        f"FOR (n:{label}) REQUIRE n.{prop} IS UNIQUE"
        for label, prop in FIXED_CONSTRAINTS
    ]
    statements += [
        f"CREATE INDEX {label.lower()}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})"
        for label, prop in FIXED_INDEXES
    ]
    for label in sorted(set(entity_labels)):
        checked_label(label)
        statements.append(
            f"CREATE CONSTRAINT {label.lower()}_uid IF NOT EXISTS "
            f"FOR (n:{label}) REQUIRE n.uid IS UNIQUE"
        )
        statements += [
            f"CREATE INDEX {label.lower()}_{prop} IF NOT EXISTS FOR (n:{label}) ON (n.{prop})"
            for prop in ENTITY_INDEXED_PROPERTIES
        ]
    return statements


CREATED_BY_ANOTHER = frozenset(
    {
        "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists",
        "Neo.ClientError.Schema.ConstraintAlreadyExists",
        "Neo.ClientError.Schema.IndexAlreadyExists",
    }
)
"""Neo4j's answer to a ``CREATE … IF NOT EXISTS`` that raced an identical one of another
transaction (workers starting together): the rule exists, as asked. Not an error: it
made an ingest worker exit at start (``bench.chaos``'s crashes on Neo4j)."""

_NAME = re.compile(r"^CREATE (?:CONSTRAINT|INDEX) (\w+) IF NOT EXISTS ")


def existing_schema_names(driver: neo4j.Driver, database: str | None) -> set[str]:
    """Names of the constraints and indexes the server has (none if it cannot list them).

    Both engines list them; each ``CREATE … IF NOT EXISTS`` of a name already there is
    a no-op, but on Neo4j every one is a schema transaction (126 took ~1.8 s on a loaded
    2-core machine, at every worker start), so the names there are not sent again."""
    names: set[str] = set()
    try:
        for listing in (
            "SHOW CONSTRAINTS YIELD name RETURN name",
            "SHOW INDEXES YIELD name RETURN name",
        ):
            records, _, _ = driver.execute_query(
                listing, database_=database, routing_=neo4j.RoutingControl.READ
            )
            names.update(str(r["name"]) for r in records)
    except neo4j.exceptions.Neo4jError:
        return set()
    return names


SCHEMA_ATTEMPTS = 10
"""How often one schema statement is sent in all while it keeps losing to other workers'."""

SCHEMA_BACKOFF_S = (0.02, 0.2)
"""Random pause before a statement is sent again, times the attempt number."""


def send_schema_statement(driver: neo4j.Driver, database: str | None, statement: str) -> None:
    """Send one ``CREATE … IF NOT EXISTS`` until it holds.

    Workers starting together take Neo4j's schema lock in turn, and the server breaks a
    cycle with ``DeadlockDetected``. Inside ``execute_query`` the driver's own rerun of
    that then surfaced as ``ResultFailedError`` (a CI run on a loaded machine), so each
    attempt is an auto-commit query in a session of its own, rerun here on a transient
    answer; the statement is idempotent, so a rerun is always safe."""
    for attempt in range(1, SCHEMA_ATTEMPTS + 1):
        try:
            with driver.session(database=database) as session:
                session.run(statement).consume()
            return
        except neo4j.exceptions.ClientError as exc:
            if exc.code not in CREATED_BY_ANOTHER:
                raise
            return
        except (neo4j.exceptions.TransientError, neo4j.exceptions.SessionExpired):
            if attempt == SCHEMA_ATTEMPTS:
                raise
            time.sleep(random.uniform(*SCHEMA_BACKOFF_S) * attempt)


def ensure_schema(driver: neo4j.Driver, database: str | None, entity_labels: Iterable[str]) -> int:
    """Create every constraint and index that is missing; returns how many were sent."""
    statements = schema_statements(entity_labels)
    with graph_errors("set up the graph schema"):
        present = existing_schema_names(driver, database)
        missing = [s for s in statements if not ((m := _NAME.match(s)) and m[1] in present)]
        for statement in missing:
            send_schema_statement(driver, database, statement)
    log.info("graph_schema_ready", statements=len(statements), sent=len(missing))
    return len(missing)
