"""Forgotten scopes: a tombstone per forgotten scope key, checked before every write.

Each forget takes the next value of a counter (its epoch), kept in the tombstone;
admission stamps every batch job with the counter as its entries left the inbox, and the
pipeline skips (and counts as ``forgotten``) a turn whose scope has a newer tombstone. A
turn published after the forget is stored: a scope is emptied, not closed.
docs/architecture.md ("Delivery").
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import redis
from redis.exceptions import LockError
from redis.lock import Lock

from turngraph.schemas.keys import FORGET_EPOCH
from turngraph.schemas.keys import TOMBSTONE_PREFIX as TOMBSTONE_KEY_PREFIX
from turngraph.schemas.turn_event import TurnEvent

__all__ = [
    "ADMISSION_LOCK_TTL_MS", "ADMITTED_EPOCH", "TOMBSTONE_TTL_S", "admission_lock",
    "admitted_epoch", "current_epoch", "hold_admission", "mark_forgotten", "release",
    "split_forgotten", "tombstone_key",
]  # fmt: skip

ADMITTED_EPOCH = "admitted_epoch"
"""The batch job's meta field with the forget epoch its turns were admitted under."""

TOMBSTONE_TTL_S = 30 * 24 * 3600
"""How long a tombstone outlives its forget (longer than any job's retries or its stay in
the failed registry, from which ``turngraph jobs`` may requeue it)."""


def tombstone_key(scope: str, key: str) -> str:
    return f"{TOMBSTONE_KEY_PREFIX}{scope}:{key}"


def mark_forgotten(conn: redis.Redis, scope: str, key: str, ttl_s: int = TOMBSTONE_TTL_S) -> int:
    """Close the scope to every turn admitted until now; returns the forget's epoch."""
    epoch = int(conn.incr(FORGET_EPOCH))
    conn.set(tombstone_key(scope, key), str(epoch), ex=ttl_s)
    return epoch


def admitted_epoch(job: Any) -> int | None:
    """The forget epoch an RQ batch job's turns were admitted under (None: a job without
    it, written before epochs or by hand: every tombstone applies to it)."""
    meta = getattr(job, "meta", None)
    value = meta.get(ADMITTED_EPOCH) if isinstance(meta, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def current_epoch(raw: bytes | str | int | None) -> int:
    """The counter's value as read from Redis (0 before the first forget)."""
    return int(raw or 0)


def _epoch(raw: bytes | None) -> int:
    try:
        return int(raw or 0)
    except ValueError:  # an older tombstone ("1") or a foreign value: the oldest epoch
        return 1


def split_forgotten(
    conn: redis.Redis, events: Sequence[TurnEvent], admitted_epoch: int | None = None
) -> tuple[list[TurnEvent], list[TurnEvent]]:
    """(events to write, events of scopes forgotten after their batch was admitted), with
    one MGET for the batch. ``admitted_epoch`` None (turns that came without admission's
    stamp): every tombstone applies."""
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
    stamp = admitted_epoch or 0
    flags: list[bytes | None] = conn.mget(keys)  # type: ignore[assignment]
    kept: list[TurnEvent] = []
    skipped: list[TurnEvent] = []
    for i, event in enumerate(events):
        newest = max((_epoch(f) for f in flags[3 * i : 3 * i + 3] if f is not None), default=0)
        (skipped if newest > stamp else kept).append(event)
    return kept, skipped


ADMISSION_LOCK_TTL_MS = 30_000
"""An admitter's lock on one admission list expires after this (its holder died)."""

HOLD_POLL_S = 0.01
"""How often a forget waiting for an admitter's lock asks again."""


def admission_lock(conn: redis.Redis, pending: str) -> Lock:
    """The lock an admitter holds on admission list ``pending`` from taking entries out
    of the inbox until their batch job is written (redis-py's ``Lock``: only its holder's
    token releases it; a blocking ``acquire`` gives up after the TTL)."""
    ttl_s = ADMISSION_LOCK_TTL_MS / 1000
    return conn.lock(pending + ":lock", timeout=ttl_s, sleep=HOLD_POLL_S, blocking_timeout=ttl_s)


def release(lock: Lock) -> None:
    """Release ``lock`` if it is still ours (it lapses after the TTL)."""
    with suppress(LockError):
        lock.release()


@contextmanager
def hold_admission(conn: redis.Redis, pending_lists: Sequence[str]) -> Iterator[None]:
    """Keep admission off these admission lists (and their inboxes) while a forget purges
    them: an admitter that took entries before the forget's epoch has written their batch
    job (where the forget finds it) before this returns. Waits at most
    :data:`ADMISSION_LOCK_TTL_MS` for a lock (a dead admitter's lapses)."""
    held: list[Lock] = []
    try:
        for pending in pending_lists:
            lock = admission_lock(conn, pending)
            if lock.acquire():  # an admitter holds it for one batch
                held.append(lock)
        yield
    finally:
        for lock in held:
            release(lock)
