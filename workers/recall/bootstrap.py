"""Load every recallable memory from the graph, page by page (recall replica start-up)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import neo4j

from schemas.ontology import DIRECTIVES as RECALLABLE_ENTITY_TYPES
from workers.recall.memory import Memory, MemoryKind

PAGE_SIZE = 5_000
"""Episodes fetched per round trip while bootstrapping."""

EPISODES_PAGE = """
MATCH (e:Episode) WHERE e.event_id > $after
WITH e ORDER BY e.event_id LIMIT $limit
OPTIONAL MATCH (e)-[:MENTIONS]->(n)
RETURN e.event_id AS event_id, e.content AS content, e.session_id AS session_id,
  e.workspace AS workspace, e.user AS user, e.turn_index AS turn_index, e.role AS role,
  e.occurred_at AS occurred_at, collect(n.name) AS entities
ORDER BY event_id
"""

ENTITY_MEMORIES = """
MATCH (n:{label})
RETURN n.uid AS uid, n.name AS name, n.summary AS summary, n.status AS status,
  n.scope AS scope, n.workspace AS workspace, n.user AS user, n.subject AS subject,
  n.first_seen AS first_seen, n.episode_ids AS episode_ids
"""


def _time(value: Any) -> datetime:
    if isinstance(value, datetime):
        return value
    if hasattr(value, "to_native"):
        return value.to_native()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


def episode_memories(driver: neo4j.Driver, database: str | None) -> Iterator[Memory]:
    after = ""
    while True:
        records, _, _ = driver.execute_query(
            EPISODES_PAGE, after=after, limit=PAGE_SIZE, database_=database
        )
        if not records:
            return
        for rec in records:
            occurred = _time(rec["occurred_at"])
            yield Memory(
                id=rec["event_id"],
                text=rec["content"],
                kind=MemoryKind.EPISODE,
                scope="session",
                created_at=occurred,
                source_created_at=occurred,
                source_event_ids=(rec["event_id"],),
                session_id=rec["session_id"],
                workspace=rec["workspace"],
                user=rec["user"],
                entities=tuple(name for name in rec["entities"] if name),
                turn_index=rec["turn_index"],
                extra={"role": rec["role"] or ""},
            )
        after = records[-1]["event_id"]


def entity_memories(driver: neo4j.Driver, database: str | None) -> Iterator[Memory]:
    for label in sorted(RECALLABLE_ENTITY_TYPES):
        records, _, _ = driver.execute_query(
            ENTITY_MEMORIES.format(label=label), database_=database
        )
        for rec in records:
            if not rec["episode_ids"]:
                continue
            user_level = rec["scope"] == "user"
            first_seen = _time(rec["first_seen"])
            yield Memory(
                id=rec["uid"],
                text=rec["summary"] or rec["name"],
                kind=MemoryKind.FACT if label == "Decision" else MemoryKind.PROMOTED,
                scope="user" if user_level else "workspace",
                created_at=first_seen,
                source_created_at=first_seen,
                source_event_ids=tuple(rec["episode_ids"]),
                workspace=None if user_level else rec["workspace"],
                user=rec["user"],
                status=rec["status"] or "Active",
                topic=rec["subject"] or label,
                extra={"entity_type": label},
            )


def all_memories(driver: neo4j.Driver, database: str | None) -> Iterator[Memory]:
    yield from episode_memories(driver, database)
    yield from entity_memories(driver, database)
