"""Forgotten scopes: a tombstone per forgotten scope key, checked before every write.

``turngraph forget`` deletes what exists; a turn of that scope already claimed by a
worker, or published a moment later by an editor that has not noticed, would otherwise
land afterwards. The ingest pipeline skips turns whose session, workspace or user has a
tombstone (counted, never silently).
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from turngraph.schemas.keys import TOMBSTONE_PREFIX as TOMBSTONE_KEY_PREFIX
from turngraph.schemas.turn_event import TurnEvent

"""``turngraph:forgotten:<scope>:<key>`` exists while a forgotten scope stays closed."""

TOMBSTONE_TTL_S = 30 * 24 * 3600
"""How long a forgotten scope refuses new turns (longer than any job's retries)."""


def tombstone_key(scope: str, key: str) -> str:
    return f"{TOMBSTONE_KEY_PREFIX}{scope}:{key}"


def mark_forgotten(conn: redis.Redis, scope: str, key: str, ttl_s: int = TOMBSTONE_TTL_S) -> None:
    conn.set(tombstone_key(scope, key), b"1", ex=ttl_s)


def split_forgotten(
    conn: redis.Redis, events: Sequence[TurnEvent]
) -> tuple[list[TurnEvent], list[TurnEvent]]:
    """(events to write, events of forgotten scopes), with one MGET for the batch."""
    keys = [
        tombstone_key(scope, value)
        for event in events
        for scope, value in (
            ("session", event.session_id),
            ("workspace", event.workspace),
            ("user", event.user),
        )
    ]
    if not keys:
        return [], []
    flags = conn.mget(keys)
    kept: list[TurnEvent] = []
    skipped: list[TurnEvent] = []
    for i, event in enumerate(events):
        (skipped if any(flags[3 * i : 3 * i + 3]) else kept).append(event)
    return kept, skipped
