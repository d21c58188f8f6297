"""Admission: every inbox's entries become RQ batch jobs, written by a trusted worker.

Entries move atomically (one Lua call, :data:`_TAKE`) into the source's admission list,
then one ``MULTI`` renames that list to the batch's stored turns
(``workers/batch_store.py``) and writes the batch job that references them (RQ's
``Queue.prepare_data`` and ``enqueue_many``), their admitted markers and the counters.
Admission reads only each entry's event id (a tenant's qualified with its tenant); the
worker validates the turns. Delivery, duplicates, counters and the forget epoch:
docs/producers.md ("One path") and docs/architecture.md ("Delivery").
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis
import structlog
from rq import Queue
from rq.exceptions import InvalidJobOperation
from rq.job import Job, JobStatus

from turngraph.producers.bounded_queue import admitted_hash, admitted_hashes, ingested_key
from turngraph.producers.tenant_inbox import load_inbox_function
from turngraph.schemas.defaults import JOB_TIMEOUT_S
from turngraph.schemas.errors import InvalidPayloadError, TurngraphError
from turngraph.schemas.keys import (
    ADMISSION_LIST_TEMPLATE,
    FORGET_EPOCH,
    INBOX_TEMPLATE,
    INBOX_WAKE_TEMPLATE,
    QUEUE_STATS_TEMPLATE,
)
from turngraph.schemas.tenants import (
    TENANTS_KEY,
    check_tenant,
    inbox_key,
    inbox_stats_key,
    inbox_wake_key,
)
from turngraph.workers import batch_store
from turngraph.workers.batch_store import admitted_event, entry_id
from turngraph.workers.ingest.job import batch_job
from turngraph.workers.ingest.markers import StoredLookup
from turngraph.workers.tombstones import admission_lock, current_epoch, release

__all__ = [
    "BATCH", "FULL_QUEUE_WAIT_S", "MAX_QUEUED_BATCHES", "OPERATOR", "WAKE_TIMEOUT_S", "Admission",
    "AdmissionCounters", "Source", "admitted_event", "operator_source", "tenant_source",
]  # fmt: skip

log = structlog.get_logger(__name__)

BATCH = 100
"""Turns per RQ job (one graph transaction)."""

MAX_QUEUED_BATCHES = 4
"""Admission moves entries only while RQ's queue holds fewer jobs than this."""

WAKE_TIMEOUT_S = 1.0
"""Idle admission block-pops the inboxes' wake lists this long before looking again."""

FULL_QUEUE_WAIT_S = 0.05
"""With RQ's queue deep enough, admission looks again this often."""

MAX_TAKE = batch_store.MAX_TURNS
"""The largest ``batch``."""

_TAKE = """
-- KEYS[1] inbox  KEYS[2] admission list  KEYS[3] forget epoch
-- ARGV[1] entries to move
-- Unless the admission list holds entries (a dead admitter's), up to ARGV[1] entries move
-- there from the inbox's head: the whole inbox by RENAME when it holds no more, else by
-- SORT ... BY nosort LIMIT ... STORE (list order kept) and LTRIM; nothing passes through
-- Lua. Returns the forget epoch, read in the same atomic step.
local n = tonumber(ARGV[1])
if n > 0 and redis.call('EXISTS', KEYS[2]) == 0 then
  local length = redis.call('LLEN', KEYS[1])
  if length > 0 and length <= n then
    redis.call('RENAME', KEYS[1], KEYS[2])
  elseif length > n then
    redis.call('SORT', KEYS[1], 'BY', 'nosort', 'LIMIT', 0, n, 'STORE', KEYS[2])
    redis.call('LTRIM', KEYS[1], n, -1)
  end
end
return redis.call('GET', KEYS[3])
"""
"""Moves one batch from an inbox to its admission list: a constant number of commands
per batch, and no entry copied into Lua and back (``LRANGE`` + ``RPUSH`` through Lua cost
Redis about twice as much); admission reads the list with a plain ``LRANGE`` sent in the
same round trip."""

_LIVE = frozenset(
    {
        JobStatus.QUEUED,
        JobStatus.STARTED,
        JobStatus.DEFERRED,
        JobStatus.SCHEDULED,
        JobStatus.FINISHED,
    }
)
"""A turn in a batch job in one of these states is on its way to the graph: published
again, it is a duplicate. Failed, stopped or canceled batches may be published again."""

OPERATOR = ""
"""The source name of the operator's inbox (tenants are named)."""


@dataclass
class AdmissionCounters:
    admitted: int = 0
    duplicates: int = 0
    rejected: int = 0
    batches: int = 0
    restored: int = 0
    """Turns whose ingested marker was set but which the graph lacked: admitted again."""


@dataclass(frozen=True)
class Source:
    """One inbox: its list, counters, wake list and admission list; ``tenant`` qualifies."""

    tenant: str
    inbox: str
    stats: str
    wake: str
    pending: str


def operator_source(queue_name: str) -> Source:
    return Source(
        OPERATOR,
        INBOX_TEMPLATE.format(queue=queue_name),
        QUEUE_STATS_TEMPLATE.format(queue=queue_name),
        INBOX_WAKE_TEMPLATE.format(queue=queue_name),
        ADMISSION_LIST_TEMPLATE.format(source=f"operator:{queue_name}"),
    )


def tenant_source(tenant: str) -> Source:
    return Source(
        tenant,
        inbox_key(tenant),
        inbox_stats_key(tenant),
        inbox_wake_key(tenant),
        ADMISSION_LIST_TEMPLATE.format(source=tenant),
    )


class Admission:
    """Admits every inbox into RQ's ``queue`` as batch jobs."""

    def __init__(
        self,
        conn: redis.Redis,
        queue: Queue,
        *,
        batch: int = BATCH,
        job_timeout_s: int = JOB_TIMEOUT_S,
        stored: StoredLookup | None = None,
    ) -> None:
        """``stored``: which event ids the graph holds (a marker alone is trusted without
        it: tests and benchmarks of admission alone)."""
        if not 1 <= batch <= MAX_TAKE:
            raise ValueError(f"batch must be 1 to {MAX_TAKE} turns")
        self._redis = conn
        self._stored = stored
        self._queue = queue
        self._batch = batch
        self._job_timeout_s = job_timeout_s
        self._operator = operator_source(queue.name)
        self._stop = threading.Event()
        self._function_loaded = False
        self._burst = False
        self.counters = AdmissionCounters()
        self._take = conn.register_script(_TAKE)  # its SHA; loaded on NOSCRIPT

    def tenants(self) -> list[str]:
        names = sorted(m.decode() for m in self._redis.smembers(TENANTS_KEY))  # type: ignore[union-attr]
        valid = []
        for name in names:
            try:
                valid.append(check_tenant(name))
            except ValueError:
                log.warning("admission_tenant_invalid")
        return valid

    def sources(self) -> list[Source]:
        return [self._operator, *(tenant_source(t) for t in self.tenants())]

    def admit_all(self) -> int:
        """One pass over every inbox; returns the entries taken from inboxes."""
        self._load_function()
        return sum(self.admit(source) for source in self.sources())

    def _load_function(self) -> None:
        """Load the inbox function tenants' producers call, once Redis answers (not at the
        worker's start: a worker waits out a Redis that is away), and again after Redis
        was lost (a restored Redis may lack it)."""
        if not self._function_loaded:
            load_inbox_function(self._redis)
            self._function_loaded = True

    def room(self) -> int:
        """Batch jobs RQ's queue may take now."""
        if self._burst:
            return 1
        return max(0, MAX_QUEUED_BATCHES - self._queue.count)

    def admit(self, source: Source) -> int:
        """Admit up to one batch of ``source``'s entries (leftovers of a dead admitter
        first); returns the entries handled."""
        lock = admission_lock(self._redis, source.pending)
        if not lock.acquire(blocking=False):
            return 0
        try:
            return self._admit_locked(source)
        finally:
            release(lock)

    def _admit_locked(self, source: Source) -> int:
        # the forget epoch is read in the step that takes the entries (see the docstring)
        room = self._batch if self.room() else 0
        entries, epoch = self._take_entries(source, room)
        if entries:
            self.admit_entries(source, entries, current_epoch(epoch))
        return len(entries)

    def _take_entries(self, source: Source, room: int) -> tuple[list[bytes], bytes | None]:
        """The move script and the admission list's ``LRANGE`` in one round trip: the
        entries to admit and the forget epoch."""
        keys = [source.inbox, source.pending, FORGET_EPOCH]
        try:
            return self._take_round_trip(keys, room)
        except redis.exceptions.NoScriptError:  # a restarted Redis lost its script cache
            self._redis.script_load(_TAKE)
            return self._take_round_trip(keys, room)

    def _take_round_trip(self, keys: list[str], room: int) -> tuple[list[bytes], bytes | None]:
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.evalsha(self._take.sha, len(keys), *keys, room)
            pipe.lrange(keys[1], 0, -1)
            epoch, entries = pipe.execute()
        return entries, epoch

    def admit_entries(self, source: Source, entries: Sequence[bytes], epoch: int = 0) -> None:
        """``source``'s admission list into a batch job, in one MULTI (a subclass admits
        other requests: ``workers/maintenance/asks.py``); ``epoch``: the forget epoch read
        with the entries. Of each entry only its event id is read here: an entry without
        one is refused (``rejected``), the ingest worker validates the rest."""
        places: dict[str, int] = {}  # event id -> its entry (the last copy, the first's place)
        rejected = repeated = 0
        for index, raw in enumerate(entries):
            try:
                event_id = entry_id(source.tenant, raw)
            except InvalidPayloadError as exc:
                rejected += 1
                log.warning("admission_entry_rejected", tenant=source.tenant, reason=str(exc))
                continue
            if event_id in places:
                repeated += 1
            places[event_id] = index
        fresh, stale = self._fresh(list(places))
        duplicates = repeated + len(places) - len(fresh)
        whole = len(fresh) == len(entries)  # every entry, in order: the list is the batch
        kept = None if whole else [entries[places[event_id]] for event_id in fresh]
        self._commit(source, fresh, kept, duplicates, rejected, epoch, stale)

    def _fresh(self, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """The event ids neither in the graph nor waiting in a live batch job, and those
        among them whose ingested marker is stale: one ``MGET`` of the ingested markers
        and one ``HMGET`` per hash of admitted markers, in one round trip; a graph lookup
        and a batch job's status only for the (rare) re-published."""
        if not ids:
            return [], []
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.mget([ingested_key(event_id) for event_id in ids])
            for key in admitted_hashes():
                pipe.hmget(key, ids)
            markers, *hashes = pipe.execute()
        # the newest hash's marker first (one turn admitted again has one per hash)
        job_ids = [next(filter(None, found), None) for found in zip(*hashes, strict=True)]
        live: dict[bytes, bool] = {}
        claimed = [i for i, marker in zip(ids, markers, strict=True) if marker is not None]
        in_graph = self._in_graph(claimed) if claimed else set()
        stale = [event_id for event_id in claimed if event_id not in in_graph]
        fresh = []
        for event_id, marker, job_id in zip(ids, markers, job_ids, strict=True):
            if marker is not None and event_id in in_graph:
                continue
            if job_id is not None:
                if job_id not in live:
                    live[job_id] = self._live(job_id.decode("utf-8", "replace"))
                if live[job_id]:
                    continue
            fresh.append(event_id)
        if stale:
            log.warning("admission_markers_stale", turns=len(stale))
        admitted = set(fresh)
        return fresh, [event_id for event_id in stale if event_id in admitted]

    def _in_graph(self, event_ids: list[str]) -> set[str]:
        """Which of the turns their markers call ingested the graph holds: all of them
        without a lookup (admission alone); none when the graph does not answer (written
        again, idempotently, rather than lost)."""
        if not event_ids or self._stored is None:
            return set(event_ids)
        try:
            return self._stored(event_ids)
        except TurngraphError as exc:
            log.warning("admission_graph_lookup_failed", error=type(exc).__name__)
            return set()

    def _live(self, job_id: str) -> bool:
        """True while the batch job is on its way to the graph (or done): not failed,
        stopped, canceled, or gone."""
        try:
            status = Job(job_id, connection=self._redis).get_status()
        except InvalidJobOperation:  # no job hash (expired, deleted)
            return False
        return status in _LIVE

    def _commit(
        self,
        source: Source,
        event_ids: Sequence[str],
        kept: Sequence[bytes] | None,
        duplicates: int,
        rejected: int,
        epoch: int = 0,
        stale: Sequence[str] = (),
    ) -> None:
        """In one MULTI: the admission list renamed to the batch's stored turns (``kept``
        None: every entry is fresh) or else deleted with ``kept`` stored instead, the batch
        job referencing them, its admitted markers, stale markers' deletion, the counters."""
        with self._redis.pipeline(transaction=True) as pipe:
            if event_ids:
                job_id = str(uuid.uuid4())
                if kept is None:
                    batch_store.store_list(pipe, source.pending, job_id)
                else:
                    pipe.delete(source.pending)
                    batch_store.store_entries(pipe, job_id, kept)
                ref = batch_store.reference(len(event_ids), source.tenant)
                job = batch_job(ref, self._job_timeout_s, job_id, admitted_epoch=epoch)
                self._queue.enqueue_many([job], pipeline=pipe)
                markers, expires_at = admitted_hash()
                pipe.hset(markers, mapping=dict.fromkeys(event_ids, job_id))
                pipe.expireat(markers, expires_at)
            else:
                pipe.delete(source.pending)
            if stale:  # the write counts from 1 again (a marker of 2 means written twice)
                pipe.delete(*(ingested_key(event_id) for event_id in stale))
            if duplicates + rejected:
                pipe.hincrby(source.stats, "enqueued", -(duplicates + rejected))
            for name, value in (
                ("duplicates", duplicates),
                ("rejected", rejected),
                ("admitted", len(event_ids)),
            ):
                if value:
                    pipe.hincrby(source.stats, name, value)
            pipe.execute()
        counters = self.counters
        counters.admitted += len(event_ids)
        counters.duplicates += duplicates
        counters.rejected += rejected
        counters.batches += bool(event_ids)
        counters.restored += len(stale)

    def burst(self, work: Callable[[], object]) -> None:
        """Admit everything the inboxes hold, then let ``work`` (a burst worker) run it
        off, until every inbox is empty: ``turngraph worker ingest --burst``. RQ's queue
        is not kept shallow here: nothing is published while this process works it off
        that the inboxes' bound did not already apply to."""
        self._burst = True
        try:
            while True:
                while self.admit_all():
                    pass
                if not self._queue.count:
                    return
                work()
        finally:
            self._burst = False

    # -- the loop beside the ingest worker --------------------------------------------
    def run(self) -> None:
        """Admit until :meth:`stop`; idle, wait on the inboxes' wake lists."""
        log.info("admission_running")
        while not self._stop.is_set():
            try:
                if self.admit_all():
                    continue
                if not self.room():  # entries wait in the inboxes
                    self._stop.wait(FULL_QUEUE_WAIT_S)
                    continue
                self.wait_idle()
            except redis.RedisError as exc:
                log.warning("admission_redis_error", error=type(exc).__name__)
                self._function_loaded = False
                self._stop.wait(0.5)

    def wait_idle(self) -> None:
        """Block until an inbox's wake list says it has entries, at most a second."""
        self._redis.blpop([source.wake for source in self.sources()], timeout=WAKE_TIMEOUT_S)

    def stop(self) -> None:
        self._stop.set()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()
