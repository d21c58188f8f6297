"""A session's turns read back from the graph, with what each mentions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import neo4j

from turngraph.schemas.turn_event import MAX_TURN_INDEX

SESSION_TURNS = """
MATCH (e:Episode {session_id: $session_id})
WHERE e.turn_index >= $first AND e.turn_index <= $last
OPTIONAL MATCH (e)-[:MENTIONS]->(n)
RETURN e.event_id AS event_id, e.session_id AS session_id, e.turn_index AS turn_index,
  e.role AS role, e.content AS content, e.occurred_at AS occurred_at, e.workspace AS workspace,
  e.user AS user, e.git_branch AS git_branch, e.speaker AS speaker,
  collect([labels(n)[0], n.name, n.subject, n.summary, n.status]) AS mentions
ORDER BY turn_index
"""

LAST_TURN = """
MATCH (e:Episode {session_id: $session_id})
RETURN max(e.turn_index) AS last
"""

LATEST_SESSION = """
MATCH (e:Episode {workspace: $workspace})
WHERE $current IS NULL OR e.session_id <> $current
RETURN e.session_id AS session_id, max(e.occurred_at) AS last
ORDER BY last DESC
LIMIT 1
"""


@dataclass(frozen=True, slots=True)
class Mention:
    """An entity a turn mentions: its ontology type, name and (decisions) subject."""

    type: str
    name: str
    subject: str | None = None
    summary: str | None = None
    status: str | None = None


@dataclass(frozen=True, slots=True)
class SessionTurn:
    event_id: str
    session_id: str
    turn_index: int
    role: str
    content: str
    occurred_at: datetime
    workspace: str
    user: str
    mentions: tuple[Mention, ...] = ()
    git_branch: str | None = None
    speaker: str = ""

    def mentioned(self, *types: str) -> list[Mention]:
        return [m for m in self.mentions if m.type in types]


def parse_time(value: Any) -> datetime:
    """Stored timestamps are UTC ISO strings (``...Z``); drivers may hand back datetimes."""
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    if hasattr(value, "to_native"):
        return parse_time(value.to_native())
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC)


def _mentions(rows: Sequence[Any]) -> tuple[Mention, ...]:
    found: dict[tuple[str, str], Mention] = {}
    for row in rows:
        if not row or row[0] is None or row[1] is None:
            continue  # OPTIONAL MATCH without a mention
        label, name, subject, summary, status = (list(row) + [None] * 5)[:5]
        found.setdefault(
            (str(label), str(name)),
            Mention(str(label), str(name), subject or None, summary or None, status or None),
        )
    return tuple(sorted(found.values(), key=lambda m: (m.type, m.name)))


def read_turns(
    driver: neo4j.Driver,
    database: str | None,
    session_id: str,
    first: int = 0,
    last: int = MAX_TURN_INDEX,
) -> list[SessionTurn]:
    """Turns ``first`` … ``last`` (inclusive) of a session, in order (index-backed)."""
    records, _, _ = driver.execute_query(
        SESSION_TURNS,
        session_id=session_id,
        first=first,
        last=last,
        database_=database,
        routing_=neo4j.RoutingControl.READ,
    )
    return [
        SessionTurn(
            event_id=r["event_id"],
            session_id=r["session_id"],
            turn_index=int(r["turn_index"]),
            role=r["role"] or "user",
            content=r["content"] or "",
            occurred_at=parse_time(r["occurred_at"]),
            workspace=r["workspace"],
            user=r["user"],
            mentions=_mentions(r["mentions"]),
            git_branch=r["git_branch"],
            speaker=r["speaker"] or "",
        )
        for r in records
    ]


def last_turn_index(driver: neo4j.Driver, database: str | None, session_id: str) -> int | None:
    """The highest turn index stored for the session (None: no turn yet)."""
    records, _, _ = driver.execute_query(
        LAST_TURN, session_id=session_id, database_=database, routing_=neo4j.RoutingControl.READ
    )
    last = records[0]["last"] if records else None
    return None if last is None else int(last)


def latest_session(
    driver: neo4j.Driver, database: str | None, workspace: str, current: str | None = None
) -> str | None:
    """The workspace's session with the latest turn, other than ``current`` (the one in
    progress): the "previous session" a recap is made of. None: there is none."""
    records, _, _ = driver.execute_query(
        LATEST_SESSION,
        workspace=workspace,
        current=current,
        database_=database,
        routing_=neo4j.RoutingControl.READ,
    )
    return str(records[0]["session_id"]) if records and records[0]["session_id"] else None
