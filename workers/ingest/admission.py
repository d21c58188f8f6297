"""Admission: tenants' inbox entries become RQ ingest jobs, written by a trusted worker.

A tenant's producers can only append TurnEvent JSON to their inbox
(``producers/tenant_inbox.py``). This step, run beside the ingest worker on the operator's
credential, moves entries into the bounded RQ queue through the same script the operator's
producers use (``producers/enqueue.lua``): the job function is fixed here (the ingest
entry), and the tenant is the one whose inbox the entry came from. Scope keys and the
event id are qualified with the tenant (``schemas.tenants.qualify``), so tenants never share
a scope, an event id or a duplicate marker, and nothing in an entry can name another tenant.

Delivery is at least once: entries are moved atomically (one ``MULTI`` of ``LMOVE``) from
the inbox to the tenant's admission list, enqueued, and only then dropped from that list;
a worker that dies in between leaves them there and the next admission enqueues them again
(counted as duplicates: the jobs exist). One worker admits a tenant at a time (a lock that
expires if its holder dies). Admission moves no more than the RQ queue has room for, so
the queue's bound holds; a full queue leaves entries in the inbox, whose own bound and
policy then apply. Every entry is counted once in the tenant's counters: ``enqueued`` as
it enters the inbox; a duplicate, an entry that is not a valid turn (``rejected``, logged
with the field names only) or one the queue's policy drops is moved out of ``enqueued`` in
the same transaction that counts it.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import redis
import structlog
from pydantic import ValidationError

from turngraph.producers.bounded_queue import BoundedQueue, Outcome
from turngraph.producers.tenant_inbox import load_inbox_function
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.tenants import (
    TENANTS_KEY,
    check_tenant,
    inbox_key,
    inbox_stats_key,
    inbox_wake_key,
    qualify,
)
from turngraph.schemas.turn_event import TurnEvent
from turngraph.schemas.validation import invalid_fields

log = structlog.get_logger(__name__)

ADMIT_BATCH = 256
"""Entries moved per round trip and per enqueue script call."""

LOCK_TTL_MS = 30_000
"""A dead admitter's lock expires after this; its admission list is then taken over."""

WAKE_TIMEOUT_S = 1.0
"""Idle admission block-pops the tenants' wake lists this long before looking again."""

FULL_QUEUE_WAIT_S = 0.1
"""With the RQ queue full, admission looks again this often."""

ADMISSION_LIST_TEMPLATE = "turngraph:admission:{tenant}"
"""Entries being admitted (outside every tenant's keys: only workers touch it)."""

_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclass
class AdmissionCounters:
    admitted: int = 0
    duplicates: int = 0
    rejected: int = 0
    dropped: int = 0


def qualified_event(tenant: str, raw: bytes) -> TurnEvent:
    """The inbox entry as the tenant's turn: scope keys and event id qualified, validated
    again (a qualified key must still fit); an :class:`InvalidPayloadError` naming the
    fields otherwise."""
    try:
        event = TurnEvent.model_validate_json(raw)
        data = event.model_dump(mode="json")
        for name in ("event_id", "session_id", "workspace", "user"):
            data[name] = qualify(tenant, data[name])
        return TurnEvent.model_validate(data)
    except ValidationError as exc:
        fields = invalid_fields(exc, "payload")
        raise InvalidPayloadError(f"invalid TurnEvent: {', '.join(fields)}") from None


class Admission:
    """Admits every tenant's inbox into ``queue`` (built with the ingest job function)."""

    def __init__(self, conn: redis.Redis, queue: BoundedQueue, *, batch: int = ADMIT_BATCH):
        self._redis = conn
        self._queue = queue
        self._batch = batch
        self._release = conn.register_script(_RELEASE)
        self._stop = threading.Event()
        self._function_loaded = False
        self.counters = AdmissionCounters()

    def tenants(self) -> list[str]:
        names = sorted(m.decode() for m in self._redis.smembers(TENANTS_KEY))  # type: ignore[union-attr]
        valid = []
        for name in names:
            try:
                valid.append(check_tenant(name))
            except ValueError:
                log.warning("admission_tenant_invalid")
        return valid

    def admit_all(self) -> int:
        """One pass over every tenant; returns the entries taken from inboxes."""
        self._load_function()
        return sum(self.admit(tenant) for tenant in self.tenants())

    def _load_function(self) -> None:
        """Load the inbox function tenants' producers call, once Redis answers (not at the
        worker's start: a worker waits out a Redis that is away), and again after Redis
        was lost (a restored Redis may lack it)."""
        if not self._function_loaded:
            load_inbox_function(self._redis)
            self._function_loaded = True

    def admit(self, tenant: str) -> int:
        """Admit up to one batch of ``tenant``'s entries (leftovers of a dead admitter
        first); returns the entries handled."""
        lock, token = ADMISSION_LIST_TEMPLATE.format(tenant=tenant) + ":lock", secrets.token_hex(8)
        if not self._redis.set(lock, token, nx=True, px=LOCK_TTL_MS):
            return 0
        try:
            return self._admit_locked(tenant)
        finally:
            self._release(keys=[lock], args=[token])

    def _admit_locked(self, tenant: str) -> int:
        pending = ADMISSION_LIST_TEMPLATE.format(tenant=tenant)
        entries: list[bytes] = self._redis.lrange(pending, 0, -1)  # type: ignore[assignment]
        if not entries:
            room = min(self._batch, self._queue.max_length - self._queue.length())
            if room <= 0:
                return 0
            with self._redis.pipeline(transaction=True) as pipe:
                for _ in range(room):
                    pipe.lmove(inbox_key(tenant), pending, "LEFT", "RIGHT")
                entries = [entry for entry in pipe.execute() if entry is not None]
        if not entries:
            return 0
        events: list[TurnEvent] = []
        rejected = 0
        for raw in entries:
            try:
                events.append(qualified_event(tenant, raw))
            except InvalidPayloadError as exc:
                rejected += 1
                log.warning("admission_entry_rejected", tenant=tenant, reason=str(exc))
        outcomes: Sequence[Outcome] = self._queue.enqueue_many(events).outcomes if events else ()
        self._count(tenant, pending, outcomes, rejected)
        return len(entries)

    def _count(self, tenant: str, pending: str, outcomes: Sequence[Outcome], rejected: int) -> None:
        duplicates = sum(1 for o in outcomes if o is Outcome.DUPLICATE)
        dropped = sum(1 for o in outcomes if o is Outcome.DROPPED_NEWEST)
        admitted = len(outcomes) - duplicates - dropped
        stats = inbox_stats_key(tenant)
        with self._redis.pipeline(transaction=True) as pipe:
            pipe.delete(pending)
            if duplicates + dropped + rejected:
                pipe.hincrby(stats, "enqueued", -(duplicates + dropped + rejected))
            for name, value in (
                ("duplicates", duplicates),
                ("dropped_newest", dropped),
                ("rejected", rejected),
                ("admitted", admitted),
            ):
                if value:
                    pipe.hincrby(stats, name, value)
            pipe.execute()
        counters = self.counters
        counters.admitted += admitted
        counters.duplicates += duplicates
        counters.rejected += rejected
        counters.dropped += dropped

    # -- the loop beside the ingest worker --------------------------------------------
    def run(self) -> None:
        """Admit until :meth:`stop`; idle, wait on the tenants' wake lists."""
        log.info("admission_running")
        while not self._stop.is_set():
            try:
                if self.admit_all():
                    continue
                tenants = self.tenants()
                if not tenants or self._queue.length() >= self._queue.max_length:
                    # nothing to serve, or no room: entries wait in the inboxes
                    self._stop.wait(FULL_QUEUE_WAIT_S if tenants else WAKE_TIMEOUT_S)
                    continue
                self._redis.blpop([inbox_wake_key(t) for t in tenants], timeout=WAKE_TIMEOUT_S)
            except redis.RedisError as exc:
                log.warning("admission_redis_error", error=type(exc).__name__)
                self._function_loaded = False
                self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()
