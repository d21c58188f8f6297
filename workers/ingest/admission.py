"""Admission: every inbox's entries become RQ batch jobs, written by a trusted worker.

Entries move atomically (one Lua call under the source's lock,
``workers/ingest/admission_take.py``) into the source's admission lists (one batch each;
several at once when draining), then one ``MULTI`` (which lets go of the lock) renames
each list to its batch's stored turns (``workers/batch_store.py``) and writes the batch
jobs that reference them (RQ's ``Queue.prepare_data`` and ``enqueue_many``), their
admitted markers and the counters.
Admission reads only each entry's event id (a tenant's qualified with its tenant); the
worker validates the turns. Delivery, duplicates, counters and the forget epoch:
docs/producers.md ("One path") and docs/architecture.md ("Delivery").
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import redis
import structlog
from redis.client import Pipeline
from rq import Queue

from turngraph.producers.bounded_queue import admitted_hash, ingested_key
from turngraph.producers.tenant_inbox import load_inbox_function
from turngraph.schemas.defaults import JOB_TIMEOUT_S
from turngraph.schemas.keys import (
    ADMISSION_LISTS,
    INBOX_TEMPLATE,
    INBOX_WAKE_TEMPLATE,
    QUEUE_STATS_TEMPLATE,
    admission_lists,
    operator_admission_list,
    tenant_admission_list,
)
from turngraph.schemas.tenants import (
    TENANTS_KEY,
    check_tenant,
    inbox_key,
    inbox_stats_key,
    inbox_wake_key,
)
from turngraph.workers import batch_store
from turngraph.workers.batch_store import admitted_event
from turngraph.workers.ingest.admission_take import (
    NOTHING,
    RELEASE,
    TAKE,
    Request,
    Taken,
    complete,
    parse,
    queue_take,
    request,
    take,
)
from turngraph.workers.ingest.duplicates import fresh_ids, places
from turngraph.workers.ingest.job import batch_job
from turngraph.workers.ingest.markers import StoredLookup
from turngraph.workers.tombstones import ADMISSION_LOCK_TTL_MS, current_epoch

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

CHAIN_TAKES = 8
"""Takes of one source a draining admission (``burst``) admits in a row, each of up to
``ADMISSION_LISTS`` batches."""

CONTENDED_S = 1.0
"""After finding a source's lock held, admission reads its admission list in a round trip
of its own (only once the lock is its own) this long, rather than with the take."""

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
        operator_admission_list(queue_name),
    )


def tenant_source(tenant: str) -> Source:
    return Source(
        tenant,
        inbox_key(tenant),
        inbox_stats_key(tenant),
        inbox_wake_key(tenant),
        tenant_admission_list(tenant),
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
        self._take_sha = str(conn.register_script(TAKE).sha)  # both loaded on NOSCRIPT
        self._release_sha = str(conn.register_script(RELEASE).sha)
        self._contended: dict[str, float] = {}  # admission list -> read apart until then
        self._held: tuple[str, str] | None = None  # (lock, token) until the MULTI lets go
        self._then: Request | None = None  # the next take, chained to the batch's MULTI
        self._taken = NOTHING  # what it found

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

    def queue_bound(self) -> int:
        """Entries move only while RQ's queue holds fewer jobs than this (0: always)."""
        return 0 if self._burst else MAX_QUEUED_BATCHES

    def chain(self) -> int:
        """Takes of one source admitted in a row (each taken in the round trip that
        commits the last): draining (:meth:`burst`) several; else one, so that each
        source gets a batch per pass (operator's first, then each tenant's)."""
        return CHAIN_TAKES if self._burst else 1

    def batches_per_take(self) -> int:
        """Batches one take moves at most (one per admission list): draining, one per
        admission list, so that a take, its markers and its ``MULTI`` serve them all;
        else one (RQ's queue is kept a few batches deep)."""
        return ADMISSION_LISTS if self._burst else 1

    def admit(self, source: Source) -> int:
        """Admit up to :meth:`chain` takes of ``source``'s entries (leftovers of a dead
        admitter first); returns the entries handled. A take costs three round trips
        whatever its batches (:meth:`batches_per_take`): the take
        (``admission_take.py``), its markers read, one ``MULTI`` that writes its jobs and
        lets go of the source's lock; chained, that ``MULTI`` takes the next batches too,
        so each further take costs two."""
        req = self._request(source)
        read = time.monotonic() >= self._contended.get(source.pending, 0.0)
        found = take(self._redis, self._take_sha, req, read=read)
        handled = 0
        for left in range(self.chain() - 1, -1, -1):
            if found.taken is not Taken.ENTRIES:
                break
            found = complete(self._redis, req, found)
            handled += sum(map(len, found.batches))
            held = self._held = req.held
            then = self._then = self._request(source) if left else None
            self._taken = NOTHING
            try:
                # the forget epoch is read in the step that takes the entries (see the docstring)
                epoch = current_epoch(found.epoch)
                if len(found.batches) == 1:
                    self.admit_entries(source, found.batches[0], epoch)
                else:
                    self.admit_batches(source, found.batches, epoch)
            finally:
                self._then = None
                if self._held == held:  # not let go by the MULTI (failed, or a subclass's)
                    self._held = None
                    self._redis.eval(RELEASE, 1, *held)
            found = self._taken
            req = then or req
        if found.taken is Taken.HELD:
            self._contended[source.pending] = time.monotonic() + CONTENDED_S
        return handled

    def _request(self, source: Source) -> Request:
        bound = self.queue_bound()
        return request(
            source.inbox, source.pending, self._queue.key, self._batch, bound,
            ADMISSION_LOCK_TTL_MS, self.batches_per_take(),
        )  # fmt: skip

    def admit_entries(self, source: Source, entries: Sequence[bytes], epoch: int = 0) -> None:
        """``source``'s admission list into a batch job, in one MULTI (a subclass admits
        other requests: ``workers/maintenance/asks.py``); ``epoch``: the forget epoch read
        with the entries. Of each entry only its event id is read here: an entry without
        one is refused (``rejected``), the ingest worker validates the rest."""
        self.admit_batches(source, [entries], epoch)

    def admit_batches(
        self, source: Source, batches: Sequence[Sequence[bytes]], epoch: int = 0
    ) -> None:
        """``source``'s admission lists (``batches``: each list's entries, in order) into
        a batch job each, in one MULTI, as :meth:`admit_entries` admits one: one marker
        lookup for them all, and a turn in two of them is admitted from the first."""
        plans, rejected, repeated = places(source.tenant, batches)
        fresh, stale = self._fresh([event_id for places in plans for event_id in places])
        duplicates = repeated + sum(map(len, plans)) - len(fresh)
        admitted = set(fresh)
        parts: list[tuple[list[str], Sequence[bytes] | None]] = []
        for entries, plan in zip(batches, plans, strict=True):
            event_ids = [event_id for event_id in plan if event_id in admitted]
            whole = len(event_ids) == len(entries)  # every entry, in order: the list is the batch
            parts.append((event_ids, None if whole else [entries[plan[i]] for i in event_ids]))
        self._commit(source, parts, duplicates, rejected, epoch, stale)

    def _fresh(self, ids: Sequence[str]) -> tuple[list[str], list[str]]:
        """The event ids to admit, and those among them whose ingested marker is stale
        (``duplicates.py``)."""
        return fresh_ids(self._redis, ids, self._stored)

    def _commit(
        self,
        source: Source,
        parts: Sequence[tuple[Sequence[str], Sequence[bytes] | None]],
        duplicates: int,
        rejected: int,
        epoch: int = 0,
        stale: Sequence[str] = (),
    ) -> None:
        """In one MULTI, for each admission list (``parts``: its event ids to admit and
        ``kept``, None when every entry is fresh): the list renamed to the batch's stored
        turns, or else deleted with ``kept`` stored instead, the batch job referencing
        them; then the admitted markers, stale markers' deletion, the counters."""
        admitted = 0
        jobs = []
        markers: list[tuple[Sequence[str], str]] = []  # event ids, their batch job
        lists = admission_lists(source.pending)[: len(parts)]
        with self._redis.pipeline(transaction=True) as pipe:
            for pending, (event_ids, kept) in zip(lists, parts, strict=True):
                if not event_ids:
                    pipe.delete(pending)
                    continue
                job_id = str(uuid.uuid4())
                if kept is None:
                    batch_store.store_list(pipe, pending, job_id)
                else:
                    pipe.delete(pending)
                    batch_store.store_entries(pipe, job_id, kept)
                ref = batch_store.reference(len(event_ids), source.tenant)
                jobs.append(batch_job(ref, self._job_timeout_s, job_id, admitted_epoch=epoch))
                markers.append((event_ids, job_id))
                admitted += len(event_ids)
            if jobs:
                self._queue.enqueue_many(jobs, pipeline=pipe)
                key, expires_at = admitted_hash()
                pipe.hset(key, mapping={i: job_id for ids, job_id in markers for i in ids})
                pipe.expireat(key, expires_at)
            if stale:  # the write counts from 1 again (a marker of 2 means written twice)
                pipe.delete(*(ingested_key(event_id) for event_id in stale))
            if duplicates + rejected:
                pipe.hincrby(source.stats, "enqueued", -(duplicates + rejected))
            for name, value in (
                ("duplicates", duplicates),
                ("rejected", rejected),
                ("admitted", admitted),
            ):
                if value:
                    pipe.hincrby(source.stats, name, value)
            self._let_go_and_take(pipe)
        counters = self.counters
        counters.admitted += admitted
        counters.duplicates += duplicates
        counters.rejected += rejected
        counters.batches += len(jobs)
        counters.restored += len(stale)

    def _let_go_and_take(self, pipe: Pipeline) -> None:
        """Run the batch's ``MULTI`` with the lock's release and (chained) the next take
        at its end: an error of the take leaves the next batch to a take of its own."""
        if self._held is not None:
            pipe.evalsha(self._release_sha, 1, *self._held)
        then = self._then
        read = queue_take(pipe, self._take_sha, then) if then is not None else 0
        replies = pipe.execute(raise_on_error=False)
        taken = NOTHING
        if then is not None:
            reply, *entries = replies[-(read + 1) :]
            del replies[-(read + 1) :]
            if not any(isinstance(r, Exception) for r in (reply, *entries)):
                taken = parse(reply, entries)
        errors = [reply for reply in replies if isinstance(reply, Exception)]
        if errors:
            if then is not None and taken.taken is Taken.ENTRIES:  # left for the next take
                self._redis.eval(RELEASE, 1, *then.held)
            raise errors[0]
        self._held = then.held if then is not None and taken.taken is Taken.ENTRIES else None
        self._taken = taken

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
