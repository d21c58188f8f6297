"""A tenant's bounded inbox: what a producer holding a tenant credential publishes into.

``inbox.lua`` (the operator's bound, drop policy and counters, event by event), run as a Redis
Function (``FCALL turngraph_inbox_push``) because a tenant credential may call our
functions but not load or evaluate scripts; the operator loads the library
(:func:`load_inbox_function`). docs/producers.md ("With a tenant credential").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from turngraph.producers.bounded_queue import (
    BatchResult,
    BoundedQueue,
    PreparedJob,
    QueueStats,
    inbox_script_source,
    parse_stats,
)
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.tenants import check_tenant, inbox_key, inbox_stats_key, inbox_wake_key

__all__ = [
    "INBOX_FUNCTION", "LIBRARY_NAME", "TenantInbox", "library_source", "load_inbox_function",
    "read_inbox_stats",
]  # fmt: skip

INBOX_FUNCTION = "turngraph_inbox_push"
"""The Redis Function a tenant's producer calls (``FCALL``)."""

LIBRARY_NAME = "turngraph_inbox"
"""The function library holding it (``FUNCTION LOAD REPLACE`` by the operator)."""


def library_source() -> str:
    """``inbox.lua`` as a Redis Function library (its body sees KEYS and ARGV as before)."""
    return (
        f"#!lua name={LIBRARY_NAME}\n"
        f"redis.register_function('{INBOX_FUNCTION}', function(KEYS, ARGV)\n"
        f"{inbox_script_source()}\nend)\n"
    )


def load_inbox_function(conn: redis.Redis) -> None:
    """Load (or replace) the inbox library; needs the operator's credential."""
    conn.execute_command("FUNCTION", "LOAD", "REPLACE", library_source())


class TenantInbox(BoundedQueue):
    """The inbox of ``tenant``, bounded to ``max_length`` entries with ``policy``.

    The connection is passed in (it carries the tenant's credential); nothing is contacted
    until the first call.
    """

    def __init__(
        self,
        conn: redis.Redis,
        *,
        tenant: str,
        max_length: int,
        policy: DropPolicy = DropPolicy.DROP_NEWEST,
    ) -> None:
        super().__init__(conn, name=inbox_key(tenant), max_length=max_length, policy=policy)
        self.tenant = check_tenant(tenant)
        self.inbox_key = inbox_key(tenant)
        self.stats_key = inbox_stats_key(tenant)
        self._keys = [self.inbox_key, self.stats_key, inbox_wake_key(tenant)]

    def call_command(self, keys: Sequence[str], args: Sequence[Any]) -> tuple[Any, ...]:
        """``FCALL`` of the inbox function (all a tenant credential may run)."""
        return ("FCALL", INBOX_FUNCTION, len(keys), *keys, *args)

    def load_command(self) -> None:
        """Nothing: the operator loads the function library, a tenant cannot."""
        return None

    def commands(
        self, jobs: Sequence[PreparedJob], dropped_local: int = 0
    ) -> list[tuple[Any, ...]]:
        """One ``FCALL``: a tenant may not append to its inbox but through the function."""
        return [self.call_command(*self.script_call(jobs, dropped_local))]

    def parse_replies(self, replies: Sequence[Any]) -> BatchResult:
        """The ``FCALL``'s reply as outcomes per event."""
        return self.parse_reply(replies[-1])

    def stats(self) -> QueueStats:
        """The tenant's counters and its inbox length."""
        return read_inbox_stats(self.conn, self.tenant)


def read_inbox_stats(conn: redis.Redis, tenant: str) -> QueueStats:
    """Counters and inbox length of ``tenant`` (readable with the tenant's credential).

    ``published == enqueued + dropped_newest + duplicates + rejected`` at every moment:
    admission moves a duplicate or an entry it refuses out of ``enqueued`` in the same
    step that counts it.
    """
    pipe = conn.pipeline(transaction=False)
    pipe.hgetall(inbox_stats_key(tenant))
    pipe.llen(inbox_key(tenant))
    raw, length = pipe.execute()
    return parse_stats(raw, length)
