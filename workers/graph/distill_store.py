"""What distillation reads from and writes to the graph, behind one Protocol.

:class:`DistillStore` is what the maintenance jobs and on-demand answers use;
:class:`BoltDistillStore` runs it on Neo4j 5 or the embedded engine
(:mod:`workers.graph.distill_statements`), ``tests.support.memory_distill`` holds its
in-memory fake. Rows are written whole; driver errors leave as :mod:`workers.graph.errors`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import neo4j

from turngraph.schemas.turn_event import MAX_TURN_INDEX, ClientInfo, GitInfo, Role, TurnEvent
from turngraph.workers.graph import distill_statements as cypher
from turngraph.workers.graph.errors import graph_errors
from turngraph.workers.graph.retry import run_write
from turngraph.workers.graph.session_turns import SessionTurn, mentions_of, parse_time

__all__ = [
    "BoltDistillStore", "DistillStore", "OpenTopic", "Row", "StoredJson", "SummarySpan",
    "turn_event",
]  # fmt: skip

Row = dict[str, Any]
"""A node's properties as the write statements name them (``$row.<name>``)."""


@dataclass(frozen=True, slots=True)
class OpenTopic:
    """A workspace topic with summaries not yet merged into its decision record."""

    topic_id: str
    open: int
    oldest: datetime


@dataclass(frozen=True, slots=True)
class SummarySpan:
    """A stored summary of a session: its turns and status."""

    uid: str
    first_turn: int
    last_turn: int
    status: str


@dataclass(frozen=True, slots=True)
class StoredJson:
    """A stored document (a summary's or a decision record's JSON) and its status now."""

    json: str
    status: str


class DistillStore(Protocol):
    """Distilled memory in the graph: the turns read back, summaries, decision records,
    memories and recaps."""

    def session_turns(
        self, session_id: str, first: int = 0, last: int = MAX_TURN_INDEX
    ) -> list[SessionTurn]:
        """Turns ``first`` … ``last`` (inclusive) of a session, in order."""
        ...

    def last_turn_index(self, session_id: str) -> int | None:
        """The highest turn index stored for the session (None: no turn yet)."""
        ...

    def latest_session(self, workspace: str, current: str | None = None) -> str | None:
        """The workspace's session with the latest turn, other than ``current``."""
        ...

    def turns_by_event_id(self, event_ids: Sequence[str]) -> list[TurnEvent]:
        """The stored turns of ``event_ids``, by session in turn order; missing ids left out."""
        ...

    def session_summaries(self, session_id: str) -> list[SummarySpan]:
        """The session's stored summaries, by their last turn."""
        ...

    def replace_drafts(self, uids: Sequence[str], final_uid: str) -> list[tuple[str, str]]:
        """The Drafts among ``uids`` become Superseded by ``final_uid`` (that one, if a
        Draft, becomes Final); returns each changed summary's uid and new status."""
        ...

    def workspace_topics(self, workspace: str) -> list[str]:
        """The topic ids of the workspace's summaries."""
        ...

    def summary(self, uid: str) -> StoredJson | None:
        """A summary's JSON and status."""
        ...

    def decision_record(self, uid: str) -> StoredJson | None:
        """A decision record's JSON and status."""
        ...

    def memory_text(self, uid: str) -> str | None:
        """A memory's (promotion's, recap's) text."""
        ...

    def memory_exists(self, uid: str) -> bool: ...

    def topic_summaries(self, topic_key: str) -> list[StoredJson]:
        """Every summary of a topic (``workspace|topic_id``)."""
        ...

    def workspaces_with_open_summaries(self) -> list[str]: ...

    def open_topics(self, workspace: str) -> list[OpenTopic]: ...

    def upsert_summary(self, row: Row) -> None:
        """Write a summary (idempotent by ``uid``), linked to its session and episodes."""
        ...

    def upsert_decision_record(self, row: Row) -> None:
        """Write a decision record; its ``summary_uids`` become Superseded, linked to it."""
        ...

    def upsert_memory(self, row: Row) -> None:
        """Write a promoted memory once (again: nothing changes), linked to its episodes."""
        ...

    def upsert_recap(self, row: Row) -> None:
        """Write or replace a session's recap memory."""
        ...


class BoltDistillStore:
    """:class:`DistillStore` on a Bolt driver (the caller's: ``turngraph.clients``)."""

    def __init__(self, driver: neo4j.Driver, database: str | None) -> None:
        self.driver = driver
        self.database = database

    def _read(self, query: str, **params: Any) -> list[Any]:
        with graph_errors("read"):
            records, _, _ = self.driver.execute_query(
                query, params, database_=self.database, routing_=neo4j.RoutingControl.READ
            )
        return list(records)

    def _write(self, query: str, row: Row) -> None:
        run_write(self.driver, self.database, lambda tx: tx.run(query, row=row).consume())

    def session_turns(
        self, session_id: str, first: int = 0, last: int = MAX_TURN_INDEX
    ) -> list[SessionTurn]:
        records = self._read(cypher.SESSION_TURNS, session_id=session_id, first=first, last=last)
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
                mentions=mentions_of(r["mentions"]),
                git_branch=r["git_branch"],
                speaker=r["speaker"] or "",
            )
            for r in records
        ]

    def last_turn_index(self, session_id: str) -> int | None:
        records = self._read(cypher.LAST_TURN, session_id=session_id)
        last = records[0]["last"] if records else None
        return None if last is None else int(last)

    def latest_session(self, workspace: str, current: str | None = None) -> str | None:
        records = self._read(cypher.LATEST_SESSION, workspace=workspace, current=current)
        return str(records[0]["session_id"]) if records and records[0]["session_id"] else None

    def turns_by_event_id(self, event_ids: Sequence[str]) -> list[TurnEvent]:
        records = self._read(cypher.EPISODES_BY_EVENT_ID, ids=list(event_ids))
        turns = [turn_event(r) for r in records]
        return sorted(turns, key=lambda t: (t.session_id, t.turn_index, t.event_id))

    def session_summaries(self, session_id: str) -> list[SummarySpan]:
        records = self._read(cypher.SESSION_SUMMARIES, session_id=session_id)
        return [
            SummarySpan(str(r["uid"]), int(r["first_turn"]), int(r["last_turn"]), str(r["status"]))
            for r in records
        ]

    def replace_drafts(self, uids: Sequence[str], final_uid: str) -> list[tuple[str, str]]:
        return run_write(
            self.driver,
            self.database,
            lambda tx: [
                (str(r["uid"]), str(r["status"]))
                for r in tx.run(cypher.REPLACE_DRAFTS, uids=list(uids), final_uid=final_uid)
            ],
        )

    def workspace_topics(self, workspace: str) -> list[str]:
        records = self._read(cypher.WORKSPACE_TOPICS, workspace=workspace)
        return sorted(str(r["topic_id"]) for r in records if r["topic_id"])

    def summary(self, uid: str) -> StoredJson | None:
        records = self._read(cypher.SUMMARY_BY_UID, uid=uid)
        if not records or not records[0]["summary"]:
            return None
        return StoredJson(str(records[0]["summary"]), str(records[0]["status"]))

    def decision_record(self, uid: str) -> StoredJson | None:
        records = self._read(cypher.DECISION_RECORD_BY_UID, uid=uid)
        if not records or not records[0]["record"]:
            return None
        return StoredJson(str(records[0]["record"]), str(records[0]["status"]))

    def memory_text(self, uid: str) -> str | None:
        records = self._read(cypher.MEMORY_TEXT_BY_UID, uid=uid)
        return str(records[0]["text"]) if records and records[0]["text"] else None

    def memory_exists(self, uid: str) -> bool:
        return bool(self._read(cypher.MEMORY_EXISTS, uid=uid))

    def topic_summaries(self, topic_key: str) -> list[StoredJson]:
        records = self._read(cypher.TOPIC_SUMMARIES, topic_key=topic_key)
        return [StoredJson(str(r["summary"]), str(r["status"])) for r in records if r["summary"]]

    def workspaces_with_open_summaries(self) -> list[str]:
        records = self._read(cypher.WORKSPACES_WITH_OPEN_SUMMARIES)
        return sorted(str(r["workspace"]) for r in records if r["workspace"])

    def open_topics(self, workspace: str) -> list[OpenTopic]:
        records = self._read(cypher.TOPICS_TO_COMPACT, workspace=workspace)
        topics = [
            OpenTopic(str(r["topic_id"]), int(r["open"]), parse_time(r["oldest"])) for r in records
        ]
        return sorted(topics, key=lambda t: t.topic_id)

    def upsert_summary(self, row: Row) -> None:
        self._write(cypher.UPSERT_SUMMARY, row)

    def upsert_decision_record(self, row: Row) -> None:
        self._write(cypher.UPSERT_DECISION_RECORD, row)

    def upsert_memory(self, row: Row) -> None:
        self._write(cypher.UPSERT_MEMORY, row)

    def upsert_recap(self, row: Row) -> None:
        self._write(cypher.UPSERT_RECAP, row)


def turn_event(row: Any) -> TurnEvent:
    """A stored episode's properties (a record or a dict; unset ones missing) as the turn it
    was written from (content redacted)."""
    client_name, _, client_version = str(row.get("client") or "unknown").partition("/")
    branch, commit = row.get("git_branch"), row.get("git_commit")
    return TurnEvent(
        event_id=row["event_id"],
        session_id=row["session_id"],
        workspace=row["workspace"],
        user=row["user"],
        turn_index=int(row["turn_index"]),
        role=Role(row.get("role") or "user"),
        speaker=row.get("speaker") or "",
        content=row.get("content") or " ",
        occurred_at=parse_time(row["occurred_at"]),
        client=ClientInfo(name=client_name or "unknown", version=client_version or "0"),
        git=GitInfo(branch=branch, commit=commit) if branch or commit else None,
        importance=float(row.get("importance") if row.get("importance") is not None else 0.5),
        tags=tuple(row.get("tags") or ()),
    )
