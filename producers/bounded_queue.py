"""The bounded inbox every producer publishes into: one atomic step per batch (append,
bound, drop, count).

Producers never write RQ jobs: they append the redacted TurnEvent JSON to the inbox, the
operator's in one ``MULTI`` (``RPUSH`` of the batch, then ``inbox_count.lua`` applies the
bound, the drop policy and the counters to what it appended), a tenant's through
``inbox.lua`` as a Redis Function (``producers/tenant_inbox.py``; the same outcome, one
event at a time in Lua); admission moves entries into RQ batch jobs.
docs/producers.md ("One path").
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, fields
from enum import IntEnum
from importlib.resources import files
from typing import Any, NamedTuple

import redis

from turngraph.schemas.defaults import INGEST_QUEUE, INGESTED_TTL_S, DropPolicy
from turngraph.schemas.keys import (
    ADMITTED_TEMPLATE,
    INBOX_TEMPLATE,
    INBOX_WAKE_TEMPLATE,
    INGESTED_PREFIX,
    QUEUE_STATS_TEMPLATE,
)
from turngraph.schemas.turn_event import TurnEvent

__all__ = [
    "BatchResult", "BoundedQueue", "Outcome", "PreparedJob", "QueueStats", "admitted_hash",
    "admitted_hashes", "delete_admitted", "inbox_script_source", "ingested_key",
    "is_ingested", "pack_resp", "parse_stats", "read_stats",
]  # fmt: skip


class Outcome(IntEnum):
    """What the script did with one event (duplicates are found at admission)."""

    ENQUEUED = 1
    DROPPED_NEWEST = 2
    DUPLICATE = 3


_OUTCOMES = {outcome.value: outcome for outcome in Outcome}
_TO_JSON = TurnEvent.__pydantic_serializer__.to_json
"""``model_dump_json`` without its wrapper (same bytes, ~20% cheaper per event)."""


class PreparedJob(NamedTuple):
    """One serialized event: its id and its JSON, built off the caller's thread."""

    job_id: str
    data: bytes


@dataclass(frozen=True)
class BatchResult:
    """The script's answer for one batch: an outcome per event, and older entries evicted."""

    outcomes: tuple[Outcome, ...]
    evicted: int


@dataclass(frozen=True)
class QueueStats:
    """Counters of one inbox, summed over every producer.

    ``published == enqueued + dropped_newest + duplicates + rejected`` always holds: the
    script counts ``published`` and ``enqueued`` as an event enters the inbox; admission
    moves a duplicate (already ingested, or twice in one batch) or an entry without a
    readable event id out of ``enqueued`` in the step that counts it (an entry with one
    that is not a valid turn is admitted, and dead-lettered by the ingest worker).
    ``dropped_oldest`` counts earlier entries evicted to make room, so ``accepted =
    enqueued - dropped_oldest``.
    ``dropped_local`` counts events producers dropped from their own full buffers (never
    reached Redis). Of the admitted, ``dead_lettered`` and ``forgotten`` were not stored
    either: :attr:`not_stored` names every reason.
    """

    published: int = 0
    enqueued: int = 0
    dropped_newest: int = 0
    dropped_oldest: int = 0
    duplicates: int = 0
    dropped_local: int = 0
    dead_lettered: int = 0
    """Turns an ingest worker refused as unreadable or isolated as poison (``turngraph jobs``)."""
    rejected: int = 0
    """Entries admission refused (no readable event id)."""
    admitted: int = 0
    """Entries admission wrote into RQ batch jobs."""
    forgotten: int = 0
    """Admitted turns a worker skipped: their scope was forgotten after they were admitted."""
    length: int = 0
    """Entries waiting in the inbox (not yet in an RQ batch job)."""

    @property
    def accepted(self) -> int:
        """Events still waiting or already admitted: enqueued and never evicted."""
        return self.enqueued - self.dropped_oldest

    @property
    def dropped(self) -> int:
        """Events dropped by the inbox's policy."""
        return self.dropped_newest + self.dropped_oldest

    @property
    def not_stored(self) -> dict[str, int]:
        """Every turn published and not stored, by reason (duplicates were stored before)."""
        return {
            "drop_newest": self.dropped_newest,
            "drop_oldest": self.dropped_oldest,
            "producer_buffer": self.dropped_local,
            "duplicate": self.duplicates,
            "rejected": self.rejected,
            "dead_lettered": self.dead_lettered,
            "forgotten": self.forgotten,
        }

    def as_dict(self) -> dict[str, int]:
        """The counters plus ``accepted``, ``dropped`` and ``not_stored`` (every reason's
        sum), for printing."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["accepted"] = self.accepted
        out["dropped"] = self.dropped
        out["not_stored"] = sum(self.not_stored.values())
        return out


def ingested_key(event_id: str) -> str:
    """Redis key of an event's ingested marker."""
    return INGESTED_PREFIX + event_id


ADMITTED_WEEK_S = INGESTED_TTL_S
"""The span of one hash of admitted markers; each lives until a week after its span."""


def admitted_hash(now: float | None = None) -> tuple[str, int]:
    """The hash admission writes a batch's admitted markers into now (event id -> batch
    job id), and the Unix time it expires at: a marker lives one to two weeks."""
    week = int((time.time() if now is None else now) // ADMITTED_WEEK_S)
    return ADMITTED_TEMPLATE.format(week=week), (week + 2) * ADMITTED_WEEK_S


def admitted_hashes(now: float | None = None) -> list[str]:
    """Every hash a live admitted marker may be in (this week's and the last; the next
    too, for a clock a little ahead), newest first."""
    week = int((time.time() if now is None else now) // ADMITTED_WEEK_S)
    return [ADMITTED_TEMPLATE.format(week=w) for w in (week + 1, week, week - 1)]


def delete_admitted(conn: Any, event_ids: Sequence[str]) -> None:
    """Delete the admitted markers of ``event_ids`` (``conn``: a client or a pipeline):
    one ``HDEL`` per hash, whatever the number of turns."""
    if event_ids:
        for key in admitted_hashes():
            conn.hdel(key, *event_ids)


def is_ingested(conn: redis.Redis, event_id: str) -> bool:
    """True when an ingest worker has written ``event_id`` to the graph (its marker is set)."""
    return bool(conn.exists(ingested_key(event_id)))


def inbox_script_source(name: str = "inbox.lua") -> str:
    """The bounded-append script (``inbox.lua``: tenants' Redis Function, and any caller
    that appends raw entries through :meth:`BoundedQueue.call_command`), or the
    operator's count script (``inbox_count.lua``)."""
    return files("turngraph.producers").joinpath(name).read_text(encoding="utf-8")


def pack_resp(args: Sequence[Any]) -> bytes:
    """One RESP command; a plain join, 2.5x cheaper than redis-py's general ``pack_command``
    for the few large arguments of a script call (str, bytes and int only)."""
    parts = [b"*%d\r\n" % len(args)]
    for arg in args:
        if isinstance(arg, str):
            value = arg.encode()
        elif isinstance(arg, bytes):
            value = arg
        elif isinstance(arg, int):
            value = b"%d" % arg
        else:
            raise TypeError(f"cannot pack {type(arg).__name__}")
        parts += (b"$%d\r\n" % len(value), value, b"\r\n")
    return b"".join(parts)


class BoundedQueue:
    """The operator's bounded inbox of queue ``name``; the operator's producers publish here.

    The connection is passed in (it decides timeouts); nothing is contacted until the
    first call. :class:`producers.tenant_inbox.TenantInbox` is the same inbox under a
    tenant's keys and credential.
    """

    def __init__(
        self,
        conn: redis.Redis,
        *,
        name: str = INGEST_QUEUE,
        max_length: int,
        policy: DropPolicy = DropPolicy.DROP_NEWEST,
    ) -> None:
        if max_length < 1:
            raise ValueError("max_length must be at least 1")
        self.conn = conn
        self.name = name
        self.max_length = max_length
        self.policy = DropPolicy(policy)
        self.inbox_key = INBOX_TEMPLATE.format(queue=name)
        self.stats_key = QUEUE_STATS_TEMPLATE.format(queue=name)
        self._keys = [self.inbox_key, self.stats_key, INBOX_WAKE_TEMPLATE.format(queue=name)]
        self._head = [str(max_length), self.policy.value]
        self._script = inbox_script_source()
        self._count = inbox_script_source("inbox_count.lua")

    def call_command(self, keys: Sequence[str], args: Sequence[Any]) -> tuple[Any, ...]:
        """``EVAL`` of ``inbox.lua`` on ``keys`` and ``args`` (:meth:`script_call`'s):
        for callers that append raw entries through the checked script."""
        return ("EVAL", self._script, len(keys), *keys, *args)

    def load_command(self) -> tuple[str, ...] | None:
        """Nothing: the operator's calls send their scripts (``EVAL``: no cache to miss)."""
        return None

    def prepare(self, event: TurnEvent) -> PreparedJob:
        """Serialize one (already redacted) event: its id and its JSON."""
        return PreparedJob(event.event_id, _TO_JSON(event, warnings=False))

    def script_call(
        self, jobs: Sequence[PreparedJob], dropped_local: int = 0
    ) -> tuple[list[str], list[Any]]:
        """KEYS and ARGV of one ``inbox.lua`` call for ``jobs`` (for callers that pipeline)."""
        return self._keys, [*self._head, dropped_local, *(job.data for job in jobs)]

    def commands(
        self, jobs: Sequence[PreparedJob], dropped_local: int = 0
    ) -> list[tuple[Any, ...]]:
        """The commands that publish ``jobs`` (and count ``dropped_local``) in one atomic
        step: ``MULTI``, ``RPUSH`` of their JSON, ``inbox_count.lua``, ``EXEC``."""
        count = ("EVAL", self._count, len(self._keys), *self._keys, *self._head, dropped_local)
        if not jobs:
            return [(*count, 0)]
        push = ("RPUSH", self.inbox_key, *(job.data for job in jobs))
        return [("MULTI",), push, (*count, len(jobs)), ("EXEC",)]

    def parse_replies(self, replies: Sequence[Any]) -> BatchResult:
        """The replies of :meth:`commands`, in order, as outcomes per event."""
        reply = replies[-1]
        if len(replies) > 1:  # EXEC's: the RPUSH's length, the count script's
            if not isinstance(reply, list):  # nil: aborted (never, without WATCH)
                raise redis.ResponseError("inbox MULTI was not executed")
            for answer in reply:
                if isinstance(answer, Exception):
                    raise answer
            reply = reply[-1]
        enqueued, dropped_newest, dropped_oldest = (int(value) for value in reply)
        outcomes = (Outcome.ENQUEUED,) * enqueued + (Outcome.DROPPED_NEWEST,) * dropped_newest
        return BatchResult(outcomes=outcomes, evicted=dropped_oldest)

    @staticmethod
    def parse_reply(reply: Iterable[Any]) -> BatchResult:
        """Turn ``inbox.lua``'s reply into outcomes per event plus the eviction count."""
        codes = [int(code) for code in reply]
        return BatchResult(outcomes=tuple(_OUTCOMES[c] for c in codes[:-1]), evicted=codes[-1])

    def enqueue_many(self, events: Sequence[TurnEvent]) -> BatchResult:
        """Append already-redacted events in one atomic step; raises redis errors."""
        commands = self.commands([self.prepare(event) for event in events])
        pool = self.conn.connection_pool
        connection = pool.get_connection()
        try:
            connection.send_packed_command([pack_resp(c) for c in commands])
            replies = [connection.read_response() for _ in commands]
        except BaseException:
            connection.disconnect()  # replies half read must not be reused
            raise
        finally:
            pool.release(connection)
        return self.parse_replies(replies)

    def enqueue(self, event: TurnEvent) -> Outcome:
        """Append one already-redacted event; raises redis errors."""
        return self.enqueue_many([event]).outcomes[0]

    def length(self) -> int:
        """Entries waiting for admission."""
        return int(self.conn.llen(self.inbox_key))

    def stats(self) -> QueueStats:
        """The shared counters and the inbox length, read in one round trip."""
        return read_stats(self.conn, self.name)


def parse_stats(raw: dict[bytes, bytes], length: int) -> QueueStats:
    """A stats hash and an inbox length as :class:`QueueStats` (unknown fields ignored)."""
    known = {f.name for f in fields(QueueStats)}
    counters = {k.decode(): int(v) for k, v in raw.items() if k.decode() in known}
    return QueueStats(**counters, length=int(length))


def read_stats(conn: redis.Redis, queue_name: str) -> QueueStats:
    """Counters and inbox length of ``queue_name``; what ``turngraph queue status`` prints."""
    pipe = conn.pipeline(transaction=True)
    pipe.hgetall(QUEUE_STATS_TEMPLATE.format(queue=queue_name))
    pipe.llen(INBOX_TEMPLATE.format(queue=queue_name))
    raw, length = pipe.execute()
    return parse_stats(raw, length)
