"""What commands ask the graph server about itself: does the database answer, which unique
constraints exist, which workspaces and sessions it holds (``turngraph scopes``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import neo4j

__all__ = [
    "CONSTRAINT_NAMES", "PING", "SESSIONS", "WORKSPACES", "ScopeCount", "constraint_names", "ping",
    "scope_counts",
]  # fmt: skip

PING = "RETURN 1"

CONSTRAINT_NAMES = "SHOW CONSTRAINTS YIELD name RETURN name"

WORKSPACES = """
MATCH (w:Workspace)
OPTIONAL MATCH (e:Episode) WHERE e.workspace = w.key
RETURN w.key AS key, count(e) AS turns, min(e.occurred_at) AS first, max(e.occurred_at) AS last
"""

SESSIONS = """
MATCH (s:Session)
OPTIONAL MATCH (e:Episode) WHERE e.session_id = s.key
RETURN s.key AS key, s.workspace AS workspace, count(e) AS turns,
       min(e.occurred_at) AS first, max(e.occurred_at) AS last
"""


@dataclass(frozen=True, slots=True)
class ScopeCount:
    """A workspace or session: its key, its workspace (sessions), turns and their span."""

    key: str
    turns: int
    first: Any
    """The first turn's ``occurred_at`` as stored (None without turns)."""
    last: Any
    workspace: str | None = None


def ping(driver: neo4j.Driver, database: str | None) -> None:
    """Raises the driver's error unless ``database`` answers a query."""
    driver.execute_query(PING, database_=database)


def constraint_names(driver: neo4j.Driver, database: str | None) -> set[str]:
    """The names of the graph's constraints (raises the driver's error)."""
    records, _, _ = driver.execute_query(
        CONSTRAINT_NAMES, database_=database, routing_=neo4j.RoutingControl.READ
    )
    return {str(r["name"]) for r in records}


def scope_counts(
    driver: neo4j.Driver, database: str | None
) -> tuple[list[ScopeCount], list[ScopeCount]]:
    """Every workspace and every session with its turn count and first and last turn."""
    read = neo4j.RoutingControl.READ
    workspaces, _, _ = driver.execute_query(WORKSPACES, database_=database, routing_=read)
    sessions, _, _ = driver.execute_query(SESSIONS, database_=database, routing_=read)
    return (
        [ScopeCount(r["key"], int(r["turns"]), r["first"], r["last"]) for r in workspaces],
        [
            ScopeCount(r["key"], int(r["turns"]), r["first"], r["last"], r["workspace"])
            for r in sessions
        ],
    )
