"""Fire-and-forget publishing of turn events: safe to call from a chat UI thread.

``Publisher.publish(event)`` only appends to a bounded in-process buffer (microseconds,
never blocks, never raises). A background thread redacts secrets, serializes the events
as JSON and appends them in batches to the bounded inbox (``bounded_queue.py``). When Redis
is down or slow, sends time out quickly and are retried with exponential backoff and
jitter while the buffer keeps accepting events; when it is full, new events are dropped
and counted (fail-open: the chat never waits for its memory).
"""

from __future__ import annotations

import random
import threading
import time
from collections import deque
from collections.abc import Callable

import redis
import structlog
from redis.backoff import NoBackoff
from redis.retry import Retry

from turngraph.producers.bounded_queue import BatchResult, BoundedQueue, Outcome, PreparedJob
from turngraph.producers.publisher_stats import PublisherStats
from turngraph.producers.redaction import redact_and_fit
from turngraph.producers.sender import SEND_ERRORS, ScriptSender
from turngraph.producers.tenant_inbox import TenantInbox
from turngraph.schemas import defaults
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.turn_event import TurnEvent

__all__ = [
    "DEFAULT_BATCH_SIZE", "DEFAULT_BUFFER_MAX_CHARS", "DEFAULT_BUFFER_SIZE",
    "DEFAULT_CLOSE_TIMEOUT_S", "DEFAULT_CONNECT_TIMEOUT_S", "DEFAULT_MAX_BACKOFF_MS",
    "DEFAULT_MIN_BACKOFF_MS", "DEFAULT_SOCKET_TIMEOUT_S", "IDLE_WAKE_S", "PIPELINE_DEPTH",
    "ConsentCheck", "Publisher",
]  # fmt: skip

log = structlog.get_logger(__name__)

DEFAULT_BUFFER_SIZE = defaults.PUBLISH_BUFFER_SIZE
"""Events a publisher holds while Redis is away; beyond it new events are dropped."""

DEFAULT_BUFFER_MAX_CHARS = 32_000_000
"""Content characters a publisher holds at most (turns may be 200k characters long)."""

DEFAULT_BATCH_SIZE = 256
"""Events per Lua call (one round trip); bounds how long one call blocks Redis."""

DEFAULT_SOCKET_TIMEOUT_S = 0.5
"""Read/write timeout of the publisher's own connection: a slow Redis fails fast."""

DEFAULT_CONNECT_TIMEOUT_S = 0.25
"""Connect timeout of the publisher's own connection."""

DEFAULT_MIN_BACKOFF_MS = 50
"""First wait after a failed send; doubles on each further failure."""

DEFAULT_MAX_BACKOFF_MS = 5_000
"""Longest wait between two attempts while Redis is unavailable."""

DEFAULT_CLOSE_TIMEOUT_S = 2.0
"""How long ``close()`` lets the sender deliver what is buffered."""

PIPELINE_DEPTH = 2
"""Script calls in flight: Redis finds the next batch waiting when it finishes one."""

IDLE_WAKE_S = 1.0
"""The sender wakes at least this often, even without new events (to retry, to stop)."""

ConsentCheck = Callable[[str], bool]
"""Called with an event's (hashed) workspace; False means: do not publish."""


def _publishing_redis(
    redis_url: str, *, socket_timeout_s: float, connect_timeout_s: float
) -> redis.Redis:
    """A Redis client for publishing: short timeouts and no retries of its own (the
    publisher's backoff is the one retry layer)."""
    return redis.Redis.from_url(
        redis_url,
        socket_timeout=socket_timeout_s,
        socket_connect_timeout=connect_timeout_s,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=0,
    )


class Publisher:
    """Publishes turn events into the bounded ingest inbox without ever blocking the caller.

    Give either ``redis`` (a client whose timeouts you chose) or ``redis_url``. ``consent``
    is checked for every event (editor-facing entrypoints pass a
    :class:`producers.consent.ConsentStore` check; ``None`` means the caller checked).
    With ``tenant`` (a producer holding that tenant's credential) events go to the
    tenant's bounded inbox (:class:`producers.tenant_inbox.TenantInbox`) with the same
    bound and policy; either way the ingest worker's admission turns them into RQ jobs.
    The background thread starts at construction; call ``close()`` when done.
    """

    def __init__(
        self,
        *,
        redis: redis.Redis | None = None,
        redis_url: str | None = None,
        queue_name: str = defaults.INGEST_QUEUE,
        max_queue_length: int = defaults.MAX_QUEUE_LENGTH,
        drop_policy: DropPolicy | str = DropPolicy.DROP_NEWEST,
        buffer_size: int = DEFAULT_BUFFER_SIZE,
        buffer_max_chars: int = DEFAULT_BUFFER_MAX_CHARS,
        batch_size: int = DEFAULT_BATCH_SIZE,
        socket_timeout_s: float = DEFAULT_SOCKET_TIMEOUT_S,
        connect_timeout_s: float = DEFAULT_CONNECT_TIMEOUT_S,
        min_backoff_ms: int = DEFAULT_MIN_BACKOFF_MS,
        max_backoff_ms: int = DEFAULT_MAX_BACKOFF_MS,
        consent: ConsentCheck | None = None,
        tenant: str | None = None,
    ) -> None:
        if (redis is None) == (redis_url is None):
            raise ValueError("give exactly one of redis= or redis_url=")
        if buffer_size < 1 or batch_size < 1:
            raise ValueError("buffer_size and batch_size must be at least 1")
        conn = redis or _publishing_redis(
            str(redis_url), socket_timeout_s=socket_timeout_s, connect_timeout_s=connect_timeout_s
        )
        self._owns_connection = redis is None
        self.queue: BoundedQueue = (
            TenantInbox(
                conn, tenant=tenant, max_length=max_queue_length, policy=DropPolicy(drop_policy)
            )
            if tenant is not None
            else BoundedQueue(
                conn, name=queue_name, max_length=max_queue_length, policy=DropPolicy(drop_policy)
            )
        )
        self._buffer_size = buffer_size
        self._buffer_max_chars = buffer_max_chars
        self._buffered_chars = 0
        self._batch_size = batch_size
        self._min_backoff_s = min_backoff_ms / 1000
        self._max_backoff_s = max_backoff_ms / 1000
        self._consent = consent
        self._stats = PublisherStats()
        self._pending = 0  # buffered events not yet answered by Redis
        self._unreported_local_drops = 0
        self._buffer: deque[TurnEvent] = deque()
        self._retry: list[PreparedJob] = []
        self._sender = ScriptSender(self.queue)
        self._lock = threading.Lock()
        self._drained = threading.Condition(self._lock)
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._closed = False
        self._available = True
        self._thread = threading.Thread(target=self._run, name="turngraph-publisher", daemon=True)
        self._thread.start()

    # -- the caller's side -------------------------------------------------------------

    def publish(self, event: TurnEvent) -> bool:
        """Queue ``event`` for publishing; True if it was buffered.

        Never raises and never blocks on I/O: False means it was dropped (no consent, the
        local buffer is full, or the publisher is closed), and the drop is counted.
        """
        try:
            size = len(event.content)
            consent = self._consent
            allowed = consent is None or consent(event.workspace)
        except Exception:  # a broken consent store (or not an event) means: no consent
            size, allowed = 0, False
        with self._lock:
            stats = self._stats
            stats.published += 1
            if self._closed:
                stats.dropped_closed += 1
                return False
            if not allowed:
                stats.not_consented += 1
                return False
            if (
                self._pending >= self._buffer_size
                or self._buffered_chars + size > self._buffer_max_chars
            ):
                stats.dropped_local += 1
                self._unreported_local_drops += 1
                return False
            self._pending += 1
            self._buffered_chars += size
            stats.buffered += 1
            self._buffer.append(event)
        if not self._wake.is_set():
            self._wake.set()
        return True

    def flush(self, timeout_s: float = 5.0) -> bool:
        """Wait up to ``timeout_s`` until every buffered event has been answered by Redis
        (enqueued, duplicate or dropped by policy); True if the buffer is empty."""
        deadline = time.monotonic() + timeout_s
        self._wake.set()
        with self._drained:
            while self._pending > 0:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._drained.wait(remaining)
            return True

    def close(self, timeout_s: float = DEFAULT_CLOSE_TIMEOUT_S) -> PublisherStats:
        """Deliver what is buffered (up to ``timeout_s``), stop the sender, release the
        connection. Later ``publish`` calls are dropped and counted. Returns the stats."""
        if not self._closed:
            self.flush(timeout_s)
            with self._lock:
                self._closed = True
            self._stopping.set()
            self._wake.set()
            self._thread.join(timeout=max(0.1, timeout_s))
            if self._owns_connection:
                self.queue.conn.close()
        return self.stats()

    def stats(self) -> PublisherStats:
        """A snapshot of this publisher's counters."""
        with self._lock:
            return PublisherStats(**self._stats.as_dict())

    @property
    def pending(self) -> int:
        """Events buffered or in flight, not yet answered by Redis."""
        return self._pending

    @property
    def redis_available(self) -> bool:
        """False after a failed send, until one succeeds again."""
        return self._available

    def __enter__(self) -> Publisher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the sender thread -------------------------------------------------------------

    def _run(self) -> None:
        failures = 0
        in_flight: deque[tuple[list[PreparedJob], int]] = deque()
        while True:
            if not in_flight and not self._retry and not self._buffer:
                if self._stopping.is_set():
                    break
                self._wake.wait(IDLE_WAKE_S)
                self._wake.clear()
                continue
            # Serialize the next batch while Redis runs the ones in flight.
            jobs = self._retry or self._prepare_batch()
            self._retry = []
            try:
                while in_flight and (len(in_flight) >= PIPELINE_DEPTH or not jobs):
                    sent, drops = in_flight[0]
                    self._record(len(sent), self._sender.receive())
                    in_flight.popleft()
                if jobs:
                    drops = self._take_local_drops()
                    in_flight.append((jobs, drops))
                    jobs = []
                    self._sender.send(*in_flight[-1])
                failures = 0
            except Exception as exc:  # SEND_ERRORS, or a bug: the sender thread must not die
                if not isinstance(exc, SEND_ERRORS):
                    log.error("publish_sender_error", error=type(exc).__name__)
                self._sender.reset()
                self._retry = [job for batch, _ in in_flight for job in batch] + jobs
                self._return_local_drops(sum(drops for _, drops in in_flight))
                in_flight.clear()
                failures += 1
                self._unavailable(exc)
                if self._stopping.is_set():
                    break
                self._stopping.wait(self._backoff_s(failures))
        self._retry = [job for batch, _ in in_flight for job in batch] + self._retry
        self._sender.close()
        self._abandon()

    def _take_local_drops(self) -> int:
        """Local drops not yet counted in Redis travel with the next call."""
        with self._lock:
            drops, self._unreported_local_drops = self._unreported_local_drops, 0
            return drops

    def _return_local_drops(self, drops: int) -> None:
        with self._lock:
            self._unreported_local_drops += drops

    def _prepare_batch(self) -> list[PreparedJob]:
        jobs: list[PreparedJob] = []
        buffer, prepare = self._buffer, self.queue.prepare
        chars = truncated = ids_hashed = 0
        for _ in range(self._batch_size):
            try:
                event = buffer.popleft()
            except IndexError:
                break
            chars += len(event.content)
            try:
                redacted = redact_and_fit(event)
                jobs.append(prepare(redacted.event))
                truncated += bool(redacted.truncated)
                ids_hashed += redacted.id_hashed
            except Exception as exc:  # an event we cannot serialize: count it, go on
                log.warning("publish_event_failed", error=type(exc).__name__)
                self._answered(failed=1)
        with self._lock:
            self._buffered_chars -= chars
            self._stats.truncated += truncated
            self._stats.ids_hashed += ids_hashed
        return jobs

    def _unavailable(self, exc: Exception) -> None:
        with self._lock:
            self._stats.send_errors += 1
        if self._available:
            self._available = False
            log.warning(
                "publish_redis_unavailable", error=type(exc).__name__, pending=self._pending
            )

    def _record(self, sent: int, result: BatchResult) -> None:
        counts = dict.fromkeys(Outcome, 0)
        for outcome in result.outcomes:
            counts[outcome] += 1
        if not self._available:
            self._available = True
            log.info("publish_redis_available", pending=self._pending)
        self._answered(
            sent=sent,
            enqueued=counts[Outcome.ENQUEUED],
            duplicates=counts[Outcome.DUPLICATE],
            dropped_newest=counts[Outcome.DROPPED_NEWEST],
            evicted_oldest=result.evicted,
        )

    def _answered(self, **counts: int) -> None:
        with self._drained:
            stats = self._stats
            for name, value in counts.items():
                setattr(stats, name, getattr(stats, name) + value)
            self._pending -= counts.get("sent", 0) + counts.get("failed", 0)
            if self._pending <= 0:
                self._drained.notify_all()

    def _backoff_s(self, failures: int) -> float:
        ceiling = min(self._max_backoff_s, self._min_backoff_s * 2 ** min(failures - 1, 30))
        return random.uniform(ceiling / 2, ceiling)  # jitter, not cryptography

    def _abandon(self) -> None:
        """At close: what could not be delivered is counted as dropped, never lost silently."""
        with self._drained:
            left = len(self._retry) + len(self._buffer)
            self._retry = []
            self._buffer.clear()
            self._buffered_chars = 0
            if left:
                self._stats.abandoned += left
                self._pending -= left
                log.warning("publish_dropped_at_close", events=left)
            self._drained.notify_all()
