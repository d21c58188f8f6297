"""The ingest worker: a stock RQ worker whose jobs are batches of turns.

Admission puts up to ``max_batch`` turns in one RQ job (one graph transaction of 100
turns costs about as much as one of 1), so RQ's bookkeeping is paid per batch, not per
turn. The worker lends each job its pipeline (:meth:`IngestWorker.perform_job`) and keeps
the job's started-registry entry short and alive while it runs, through RQ's public
``get_heartbeat_ttl`` and ``maintain_heartbeats``: a worker that was SIGKILLed stops
beating, and RQ's own ``StartedJobRegistry.cleanup`` (every maintenance interval) hands
the job to its ``Retry`` within :data:`HEARTBEAT_TTL_S` plus one interval.

Hostile input (``workers/ingest/envelope.py``): a job hash RQ could not read or that is not
ours (written by hand into RQ's queue) is refused at dequeue, and a payload that is not a
valid turn inside a batch, each dead-lettered with a typed reason naming the field
(``workers/ingest/dead_letters.py``); the rest proceeds. A batch that fails for a
permanent reason is bisected until the poison turn is alone
(``workers/ingest/isolation.py``): the good turns are written in the same round, the bad
one is dead-lettered once. A transient failure fails the job and RQ retries the whole
batch with back-off (writes are idempotent).
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import redis
import structlog
from rq.job import Job, JobStatus
from rq.queue import Queue

from turngraph.producers.rq_internals import RQ_JOB_PREFIX
from turngraph.schemas.defaults import FAILURE_TTL_S
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.keys import QUEUE_STATS_TEMPLATE
from turngraph.workers.ingest import dead_letters
from turngraph.workers.ingest.dead_letters import DeadLetter
from turngraph.workers.ingest.envelope import (
    JOB_ID,
    EnvelopeError,
    check_fields,
    check_job_data,
    check_job_id,
    check_origin,
    read_job,
)
from turngraph.workers.ingest.isolation import run_isolating
from turngraph.workers.ingest.pipeline import IngestPipeline, IngestResult, parse_payload
from turngraph.workers.stoppable import StoppableWorker
from turngraph.workers.tombstones import admitted_epoch

__all__ = ["HEARTBEAT_TTL_S", "IngestWorker", "run_batch"]

log = structlog.get_logger(__name__)

DEFAULT_MAX_BATCH = 100
"""Turns per RQ job, so per graph transaction (admission forms the batches)."""

HEARTBEAT_TTL_S = 10
"""A running job's started-registry entry lives this long unless renewed."""

BEAT_S = 3.0
"""How often a working worker renews it."""

STUCK_S = HEARTBEAT_TTL_S
"""A job this long in RQ's intermediate list, never started, is retried (RQ waits 60 s)."""

BatchObserver = Callable[[int, float, float | None], None]
"""Told of every batch: its turns, the seconds it took, and how long its job had waited
in the queue (``None`` when unknown); the metrics histograms."""


def _payload_letter(event_id: str, exc: InvalidPayloadError) -> DeadLetter:
    if isinstance(exc, EnvelopeError):
        return DeadLetter(event_id, "EnvelopeError", exc.field, exc.reason, time.time())
    fields = str(exc).partition(": ")[2] or "payload"
    return DeadLetter(event_id, "InvalidPayloadError", fields, "does not validate", time.time())


def _event_id(payload: Any, job_id: str, index: int) -> str:
    """The payload's event id when it is one of ours, else its job and place in the batch."""
    event_id = payload.get("event_id") if isinstance(payload, dict) else None
    if isinstance(event_id, str) and JOB_ID.fullmatch(event_id):
        return event_id
    return f"{job_id}:{index}"


def run_batch(
    pipeline: IngestPipeline,
    conn: redis.Redis,
    queue_name: str,
    payloads: Sequence[Any],
    job_id: str = "batch",
    admitted_epoch: int | None = None,
) -> dict[str, int]:
    """Ingest ``payloads``; unreadable ones and poison turns are dead-lettered, turns of
    scopes forgotten since ``admitted_epoch`` skipped (both counted in the queue's
    stats), the rest written. A transient failure propagates (RQ retries the job)."""
    items, letters = [], []
    for index, payload in enumerate(payloads if isinstance(payloads, list) else []):
        try:
            event = parse_payload(payload)
            items.append((event.event_id, event))
        except InvalidPayloadError as exc:
            letters.append(_payload_letter(_event_id(payload, job_id, index), exc))
    if not isinstance(payloads, list):
        letters.append(DeadLetter(job_id, "EnvelopeError", "data.args", "not a list", time.time()))
    isolated = run_isolating(
        lambda part: pipeline.ingest([event for _, event in part], admitted_epoch), items
    )
    for (event_id, _), error in isolated.poisoned:
        letters.append(
            DeadLetter(event_id, "PoisonTurnError", "turn", type(error).__name__, time.time())
        )
    if isolated.poisoned:
        log.warning(
            "ingest_poison_isolated", turns=len(isolated.poisoned), writes=isolated.attempts
        )
    kept = {event_id: event.model_dump(mode="json") for (event_id, event), _ in isolated.poisoned}
    if letters:
        dead_letters.record(conn, queue_name, letters, kept)
        log.warning("ingest_jobs_dead_lettered", queue=queue_name, jobs=len(letters))
    counts = dict.fromkeys(IngestResult(0, 0, 0, 0, 0).as_counts(), 0)
    for result in isolated.results:
        for name, value in result.as_counts().items():
            counts[name] += value
    counts["dead_lettered"] = len(letters)
    if counts["forgotten"]:
        stats = QUEUE_STATS_TEMPLATE.format(queue=queue_name)
        conn.hincrby(stats, "forgotten", counts["forgotten"])
    return counts


class IngestWorker(StoppableWorker):
    """A :class:`rq.SimpleWorker` (no fork per job, warm graph connections) that runs
    ingest batch jobs through the :class:`IngestPipeline` it is given."""

    def __init__(
        self,
        queues: Sequence[Queue],
        *,
        pipeline: IngestPipeline,
        batch_observer: BatchObserver | None = None,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("log_job_description", False)
        super().__init__(list(queues), **kwargs)
        self.pipeline = pipeline
        self.batch_observer = batch_observer

    def get_heartbeat_ttl(self, job: Job) -> int:
        return HEARTBEAT_TTL_S

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        """Cold shutdown (a second SIGTERM or SIGINT, a second or more after the first).

        Mid-batch, the job is failed at once through RQ's ``handle_job_failure`` (its
        ``Retry`` schedules it again; writes are idempotent) and the process leaves: RQ
        would raise ``SystemExit`` into the job and then wait for the LLM calls still
        running. Idle, RQ exits."""
        asked = self.stop_requested_at
        repeated = asked is not None and time.monotonic() - asked < 1.0
        job = self.get_current_job()
        if repeated or job is None:  # RQ ignores a repeat within a second
            super().request_force_stop(signum, frame)
            return
        with contextlib.suppress(redis.RedisError):
            queue = Queue(job.origin, connection=self.connection, serializer=self.serializer)
            self.handle_job_failure(job, queue, exc_string="cold shutdown")
            self.register_death()
        if self.scheduler:
            self.stop_scheduler()
        log.warning("ingest_cold_shutdown", job_id=job.id)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)

    def run_maintenance_tasks(self) -> None:
        """Ids RQ skipped for having no job hash or no data are dead-lettered first (RQ's
        own cleaning drops them silently), then RQ's maintenance, then jobs stuck in RQ's
        intermediate list for :data:`STUCK_S` are handed to their ``Retry``."""
        for queue in self.queues:
            self._refuse_skipped(queue, None)
        super().run_maintenance_tasks()
        for queue in self.queues:
            if queue.acquire_maintenance_lock():
                try:
                    self._retry_stuck(queue)
                finally:
                    queue.release_maintenance_lock()

    def _retry_stuck(self, queue: Queue) -> None:
        """A job dequeued (moved to RQ's intermediate list) just as Redis died never
        reaches the started registry: RQ's ``IntermediateQueue.cleanup`` fails it into its
        ``Retry`` only a minute after first seeing it. The same steps through the same
        public methods, after :data:`STUCK_S` (a live worker starts its job within
        milliseconds of dequeuing it)."""
        stuck = queue.intermediate_queue
        for job_id in stuck.get_job_ids():
            if job_id in queue.started_job_registry or stuck.set_first_seen(job_id):
                continue
            first_seen = stuck.get_first_seen(job_id)
            if first_seen is None or (datetime.now(UTC) - first_seen).total_seconds() < STUCK_S:
                continue
            job = queue.fetch_job(job_id)
            if job is not None:
                self.handle_job_failure(job, queue, exc_string="stuck in the intermediate list")
                log.warning("ingest_stuck_job_retried", job_id=job_id)
            stuck.remove(job_id)

    # -- dequeue: a job RQ cannot read, or not ours, is dead-lettered, never a crash ---
    def dequeue_job_and_maintain_ttl(
        self, timeout: int | None, max_idle_time: int | None = None
    ) -> Any:
        while True:
            try:
                result = super().dequeue_job_and_maintain_ttl(timeout, max_idle_time)
            except Exception as exc:
                job_id, queue = getattr(exc, "job_id", None), getattr(exc, "queue", None)
                if job_id is None or queue is None:
                    raise
                self._refuse(queue, str(job_id), self._unreadable_letter(str(job_id)))
                continue
            if result is None:  # burst mode, the queue ran dry: nothing left behind
                for queue in self.queues:
                    self._refuse_skipped(queue, None)
                return None
            job, queue = result
            self._refuse_skipped(queue, job.id)
            try:
                check_job_id(job.id)
                check_fields(self.connection.hgetall(job.key))  # type: ignore[arg-type]
                check_job_data(job)
                check_origin(job, queue.name)
            except EnvelopeError as exc:
                self._refuse(queue, job.id, _payload_letter(job.id, exc))
                continue
            return result

    def _refuse(self, queue: Queue, job_id: str, letter: DeadLetter) -> None:
        """Dead-letter a job hash we will not run: ``failed`` (RQ's ``set_status``), and
        expiring after the failure TTL."""
        readable = bool(JOB_ID.fullmatch(job_id)) and bool(
            self.connection.exists(RQ_JOB_PREFIX + job_id)
        )
        with self.connection.pipeline(transaction=False) as pipe:
            pipe.lrem(queue.intermediate_queue_key, 0, job_id)
            if readable:
                Job(job_id, connection=self.connection).set_status(JobStatus.FAILED, pipe)
                pipe.expire(RQ_JOB_PREFIX + job_id, FAILURE_TTL_S)
            pipe.execute()
        dead_letters.record(self.connection, queue.name, [letter])
        log.warning("ingest_job_refused", field=letter.field)

    def _unreadable_letter(self, job_id: str) -> DeadLetter:
        """RQ could not restore the job: find the field by reading it ourselves."""
        raw: Any = self.connection.hgetall(RQ_JOB_PREFIX + job_id) if len(job_id) <= 1024 else None
        try:
            read_job(job_id, raw, connection=self.connection, serializer=self.serializer)
        except EnvelopeError as exc:
            return _payload_letter(job_id, exc)
        return DeadLetter(job_id, "EnvelopeError", "job", "unreadable", time.time())

    def _refuse_skipped(self, queue: Queue, current: str | None) -> None:
        """Dead-letter the ids RQ moved to its intermediate list and then skipped without a
        word (no job hash, or a hash without ``data``): they would vanish, or come back
        for ever as ``queued``. One pipelined read of the (short) intermediate list."""
        conn = self.connection
        raw: list[Any] = conn.lrange(queue.intermediate_queue_key, 0, -1)
        ids = [i.decode("utf-8", "replace") for i in raw]
        ids = [job_id for job_id in ids if job_id != current]
        if not ids:
            return
        with conn.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hexists(RQ_JOB_PREFIX + job_id, "data")
                pipe.exists(RQ_JOB_PREFIX + job_id)
            found = pipe.execute()
        letters = []
        for job_id, has_data, has_hash in zip(ids, found[::2], found[1::2], strict=True):
            if has_data:
                continue
            field, reason = ("data", "missing") if has_hash else ("job", "no job hash")
            letters.append(DeadLetter(job_id, "EnvelopeError", field, reason, time.time()))
        if not letters:
            return
        with conn.pipeline(transaction=True) as pipe:
            for letter in letters:
                pipe.lrem(queue.intermediate_queue_key, 0, letter.job_id)
                pipe.delete(RQ_JOB_PREFIX + letter.job_id)  # a data-less hash, else nothing
            pipe.execute()
        dead_letters.record(conn, queue.name, letters)
        log.warning("ingest_jobs_refused", queue=queue.name, jobs=len(letters), field="job")

    def perform_job(self, job: Job, queue: Queue) -> bool:
        def ingest(payloads: Sequence[Any], origin: str) -> dict[str, int]:
            with self._beating(job):
                return run_batch(
                    self.pipeline,
                    self.connection,
                    origin or queue.name,
                    payloads,
                    job.id,
                    admitted_epoch(job),
                )

        job.ingest = ingest  # type: ignore[attr-defined]
        started = time.perf_counter()
        waited_s = None
        if job.enqueued_at is not None:  # RQ keeps naive UTC datetimes
            enqueued = job.enqueued_at.replace(tzinfo=job.enqueued_at.tzinfo or UTC)
            waited_s = max(0.0, (datetime.now(UTC) - enqueued).total_seconds())
        try:
            return super().perform_job(job, queue)
        finally:
            if self.batch_observer is not None:
                turns = len(job.args[0]) if job.args and isinstance(job.args[0], list) else 0
                self.batch_observer(turns, time.perf_counter() - started, waited_s)

    @contextmanager
    def _beating(self, job: Job) -> Iterator[None]:
        """Renew the job's started-registry entry every :data:`BEAT_S` while the batch
        runs (inside the job: RQ's own bookkeeping before and after never races it)."""
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(BEAT_S):
                try:
                    self.maintain_heartbeats(job)
                except redis.RedisError as exc:  # the batch itself will notice
                    log.warning("ingest_heartbeat_failed", error=type(exc).__name__)

        thread = threading.Thread(target=beat, name="ingest-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(timeout=BEAT_S + 1)
