"""A tenant's bounded inbox: what a producer holding a tenant credential publishes into.

A tenant credential may touch only ``turngraph:t:<tenant>:*`` (``schemas/tenants.py``), so
its producers cannot write RQ job hashes. They append the redacted TurnEvent JSON to the
tenant's inbox through ``inbox.lua`` (bound, drop policy and counters in one atomic step
per batch, as ``enqueue.lua`` does for the operator's producers); the ingest worker admits
inbox entries as RQ jobs, with the job function and the tenant fixed by the worker.

The script runs as a Redis Function (``FCALL turngraph_inbox_push``): a tenant credential
may call our functions but not load or evaluate scripts of its own (``EVAL*``, ``SCRIPT``,
``FUNCTION LOAD``), so it cannot run a busy loop that stops Redis for everyone. The
operator loads the library (:func:`load_inbox_function`: ``turngraph credentials issue``
and every ingest worker at start).

:class:`TenantInbox` has the interface the publisher's sender uses of
:class:`producers.bounded_queue.BoundedQueue` (prepare, script call, reply, stats).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import fields
from importlib.resources import files
from typing import Any

import redis

from turngraph.producers.bounded_queue import BatchResult, BoundedQueue, PreparedJob, QueueStats
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.tenants import check_tenant, inbox_key, inbox_stats_key, inbox_wake_key
from turngraph.schemas.turn_event import TurnEvent

_TO_JSON = TurnEvent.__pydantic_serializer__.to_json


INBOX_FUNCTION = "turngraph_inbox_push"
"""The Redis Function a tenant's producer calls (``FCALL``)."""

LIBRARY_NAME = "turngraph_inbox"
"""The function library holding it (``FUNCTION LOAD REPLACE`` by the operator)."""


def _load_script_source() -> str:
    return files("turngraph.producers").joinpath("inbox.lua").read_text(encoding="utf-8")


def library_source() -> str:
    """``inbox.lua`` as a Redis Function library (its body sees KEYS and ARGV as before)."""
    return (
        f"#!lua name={LIBRARY_NAME}\n"
        f"redis.register_function('{INBOX_FUNCTION}', function(KEYS, ARGV)\n"
        f"{_load_script_source()}\nend)\n"
    )


def load_inbox_function(conn: redis.Redis) -> None:
    """Load (or replace) the inbox library; needs the operator's credential."""
    conn.execute_command("FUNCTION", "LOAD", "REPLACE", library_source())


class TenantInbox:
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
        if max_length < 1:
            raise ValueError("max_length must be at least 1")
        self.conn = conn
        self.tenant = check_tenant(tenant)
        self.max_length = max_length
        self.policy = DropPolicy(policy)
        self.name = inbox_key(tenant)
        self._keys = [inbox_key(tenant), inbox_stats_key(tenant), inbox_wake_key(tenant)]
        self._head = [str(max_length), self.policy.value]

    def call_command(self, keys: Sequence[str], args: Sequence[Any]) -> tuple[Any, ...]:
        """``FCALL`` of the inbox function (all a tenant credential may run)."""
        return ("FCALL", INBOX_FUNCTION, len(keys), *keys, *args)

    def load_command(self) -> None:
        """Nothing: the operator loads the function library, a tenant cannot."""
        return None

    def prepare(self, event: TurnEvent) -> PreparedJob:
        """Serialize one (already redacted) event: its id and its JSON."""
        return PreparedJob(event.event_id, _TO_JSON(event, warnings=False))

    def script_call(
        self, jobs: Sequence[PreparedJob], dropped_local: int = 0
    ) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV of one script call for ``jobs``."""
        return self._keys, [*self._head, dropped_local, *(job.data for job in jobs)]

    @staticmethod
    def parse_reply(reply: Iterable[Any]) -> BatchResult:
        """Outcomes per event plus the number of older entries evicted."""
        return BoundedQueue.parse_reply(reply)

    def enqueue_many(self, events: Sequence[TurnEvent]) -> BatchResult:
        """Append already-redacted events in one atomic step; raises redis errors."""
        keys, args = self.script_call([self.prepare(event) for event in events])
        return self.parse_reply(self.conn.execute_command(*self.call_command(keys, args)))

    def length(self) -> int:
        """Entries waiting for admission."""
        return int(self.conn.llen(self._keys[0]))

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
    known = {f.name for f in fields(QueueStats)}
    counters = {k.decode(): int(v) for k, v in raw.items() if k.decode() in known}
    return QueueStats(**counters, length=int(length))
