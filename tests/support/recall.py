"""Builders for recall tests: memories and requests with sensible defaults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from turngraph.schemas.recall import RecallRequest
from turngraph.workers.recall.memory import Memory, MemoryKind

NOW = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)


def memory(
    memory_id: str,
    text: str,
    *,
    days_ago: float = 1.0,
    workspace: str | None = "ws_a",
    session_id: str | None = "s_1",
    user: str | None = "u_1",
    **fields: Any,
) -> Memory:
    fields.setdefault("kind", MemoryKind.EPISODE)
    fields.setdefault("scope", "session" if session_id else "workspace")
    created = NOW - timedelta(days=days_ago)
    return Memory(
        id=memory_id,
        text=text,
        created_at=created,
        source_created_at=fields.pop("source_created_at", created),
        source_event_ids=fields.pop("source_event_ids", (f"e_{memory_id}",)),
        workspace=workspace,
        session_id=session_id,
        user=user,
        **fields,
    )


def request(query: str, **fields: Any) -> RecallRequest:
    fields.setdefault("workspace", "ws_a")
    fields.setdefault("session_id", "s_now")
    fields.setdefault("user", "u_1")
    fields.setdefault("max_tokens", 5_000)
    return RecallRequest(query=query, **fields)
