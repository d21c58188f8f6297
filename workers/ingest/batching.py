"""An RQ worker that ingests queued turns in batches, and never dies on what it reads.

Stock RQ spends several Redis round trips of bookkeeping on every job (about 230 no-op
jobs/s per worker measured here), below the 500 turns/s target, while one graph
transaction of 100 turns costs about as much as one of 1 turn. So when this worker takes
a job, it also *claims* up to ``max_batch - 1`` more queued jobs in one atomic step
(``workers/ingest/claims.py``: tagged with the worker, renewed by a heartbeat, given back
by any live worker within seconds of a crash), runs them through the pipeline with the
job RQ dequeued, and finishes them in one pipelined round trip. The dequeued job keeps
RQ's own handling (success, failure, retry); claimed jobs are bookkept here.

Hostile input (``workers/ingest/envelope.py``): every dequeued or claimed job is read
defensively; one that cannot be read (a forged id, a job hash without data, data that is
not JSON, a bad ``timeout``, ``created_at`` or ``retries_left``, another function) is
dead-lettered with a typed reason naming the field (``workers/ingest/dead_letters.py``)
and the rest of the batch proceeds. A batch that fails for a permanent reason is bisected
until the poison turn is alone (``workers/ingest/isolation.py``): the good turns are
written in the same round, the bad one is dead-lettered once. A transient failure gives
the whole batch back (RQ retries the dequeued job with back-off).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import redis
import structlog
from rq.job import Job
from rq.queue import Queue

from turngraph.producers.bounded_queue import INGEST_FUNCTION
from turngraph.producers.rq_internals import RQ_JOB_PREFIX, rq_timestamp
from turngraph.schemas.errors import ConfigurationError, InvalidPayloadError, PermanentError
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.ingest import claims, dead_letters
from turngraph.workers.ingest.claims import claim_key, requeue_expired_claims
from turngraph.workers.ingest.dead_letters import DeadLetter
from turngraph.workers.ingest.envelope import (
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
from turngraph.workers.trusted_jobs import TrustedJob

__all__ = ["BatchingIngestWorker", "IngestJob", "claim_key", "requeue_expired_claims"]

log = structlog.get_logger(__name__)

DEFAULT_MAX_BATCH = 100
"""Turns per graph transaction, counting the dequeued job."""

BatchObserver = Callable[[int, float, float | None], None]
"""Told of every batch: its jobs, the seconds it took, and how long its dequeued job
had waited in the queue (``None`` when unknown); the metrics histograms."""


class UnknownJobError(PermanentError):
    """A job on the ingest queue names a function other than the ingest entry."""


class PoisonTurnError(PermanentError):
    """A turn the graph write refused alone, for a reason retrying cannot fix."""


class IngestJob(TrustedJob):
    """A job as the batching worker performs it: the batch the worker bound, not an import
    of whatever function the job hash names."""

    batch: Callable[[], dict[str, int]] | None = None

    @property
    def func(self) -> Callable[..., dict[str, int]]:
        """What RQ calls to perform the job (with the job's own arguments, ignored here:
        the batch holds them)."""
        if self.func_name != INGEST_FUNCTION:
            self.retries_left = 0
            raise UnknownJobError("the ingest worker runs only ingest jobs")
        batch = self.batch
        if batch is None:
            raise ConfigurationError("ingest job performed without a bound batch")

        def perform(*_args: Any, **_kwargs: Any) -> dict[str, int]:
            try:
                return batch()
            except PermanentError:
                self.retries_left = 0  # RQ reads this when it handles the failure: no retry
                raise

        return perform


@dataclass
class _Outcome:
    """What the batch did to the claimed jobs (set once the pipeline ran to the end)."""

    poisoned: dict[str, DeadLetter] = field(default_factory=dict)


def _payload_letter(job_id: str, exc: InvalidPayloadError) -> DeadLetter:
    if isinstance(exc, EnvelopeError):
        return DeadLetter(job_id, "EnvelopeError", exc.field, exc.reason, time.time())
    fields = str(exc).partition(": ")[2] or "payload"
    return DeadLetter(job_id, "InvalidPayloadError", fields, "does not validate", time.time())


class BatchingIngestWorker(StoppableWorker):
    """A :class:`rq.SimpleWorker` (no fork per job) that batches consecutive ingest jobs
    through the :class:`IngestPipeline` it is given."""

    job_class = IngestJob
    in_flight: tuple[str, ...] = ()
    """Ids of the batch being ingested (the dequeued job first); empty between batches."""
    _batch_jobs = 0

    def __init__(
        self,
        queues: Sequence[Queue],
        *,
        pipeline: IngestPipeline,
        max_batch: int = DEFAULT_MAX_BATCH,
        batch_observer: BatchObserver | None = None,
        **kwargs: Any,
    ) -> None:
        # RQ logs a job's description at dequeue, before any check: a forged one could
        # carry chat text or a secret into the log (ours is only the event id anyway)
        kwargs.setdefault("log_job_description", False)
        super().__init__(list(queues), job_class=IngestJob, **kwargs)
        self.pipeline = pipeline
        self.max_batch = max_batch
        self.batch_observer = batch_observer
        self._outcome: _Outcome | None = None

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        """Cold shutdown (a second SIGTERM or SIGINT, a second or more after the first).

        Mid-batch, the batch goes back to the queue's head at once (writes are idempotent)
        and the process leaves: RQ would otherwise raise ``SystemExit`` into the job, count
        it as a failed job and wait for the LLM calls still running. Idle, RQ exits."""
        asked = self.stop_requested_at
        repeated = asked is not None and time.monotonic() - asked < 1.0
        if repeated or not self.in_flight:  # RQ ignores a repeat within a second
            super().request_force_stop(signum, frame)
            return
        handed_back = 0
        with contextlib.suppress(redis.RedisError):
            dequeued = self.in_flight[0]
            handed_back = self.requeue_in_flight()
            for queue in self.queues:
                claims.forget_started(self.connection, queue, dequeued)
            self.register_death()
        if self.scheduler:
            self.stop_scheduler()
        log.warning("ingest_cold_shutdown", jobs_handed_back=handed_back)
        os._exit(0)

    def run_maintenance_tasks(self) -> None:
        """Our sweep first (RQ's cleaning drops intermediate ids without a job hash
        silently: ours dead-letters them), then RQ's, then claims of dead workers."""
        for queue in self.queues:
            self._refuse_skipped(queue, None)
            self._sweep(queue)
        super().run_maintenance_tasks()
        for queue in self.queues:
            requeue_expired_claims(self.connection, queue)

    def _sweep(self, queue: Queue) -> None:
        """Stale RQ entries and jobs in limbo (``claims.sweep_limbo``); an id RQ skipped for
        having no job hash is dead-lettered, so every refusal is counted."""
        swept = claims.sweep_limbo(self.connection, queue)
        letters = [
            DeadLetter(job_id, "EnvelopeError", "job", "no job hash", time.time())
            for job_id in swept.without_hash
        ]
        if letters:
            dead_letters.record(self.connection, queue.name, letters)
            log.warning("ingest_jobs_refused", queue=queue.name, jobs=len(letters), field="job")

    # -- dequeue: a job RQ cannot read is dead-lettered, never a crash ---------------
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
                self._refuse_unreadable(queue, str(job_id))
                self.connection.lrem(queue.intermediate_queue_key, 0, str(job_id))
                continue
            if result is None:  # burst mode, the queue ran dry: nothing left behind
                for queue in self.queues:
                    self._refuse_skipped(queue, None)
                    self._sweep(queue)
                return None
            job, queue = result
            self._refuse_skipped(queue, job.id)
            try:
                check_job_id(job.id)
                check_fields(self.connection.hgetall(job.key))  # type: ignore[arg-type]
                check_job_data(job)
                check_origin(job, queue.name)
            except EnvelopeError as exc:
                dead_letters.record(self.connection, queue.name, [_payload_letter(job.id, exc)])
                self.connection.lrem(queue.intermediate_queue_key, 0, job.id)
                log.warning("ingest_job_refused", job_id=job.id, field=exc.field)
                continue
            return result

    def _refuse_skipped(self, queue: Queue, current: str | None) -> None:
        """Dead-letter the ids RQ moved to its intermediate list and then skipped without a
        word (no job hash, or a hash without ``data``): they would vanish, or come back
        for ever as ``queued``. One pipelined read of the (short) intermediate list."""
        conn = self.connection
        raw: list[Any] = conn.lrange(queue.intermediate_queue_key, 0, -1)
        ids = [i.decode("utf-8", "replace") for i in raw if i.decode("utf-8", "replace") != current]
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

    def _refuse_unreadable(self, queue: Queue, job_id: str) -> None:
        """RQ could not restore the job: find the field by reading it ourselves."""
        raw: Any = self.connection.hgetall(RQ_JOB_PREFIX + job_id) if len(job_id) <= 1024 else None
        try:
            read_job(job_id, raw, connection=self.connection, serializer=self.serializer)
            letter = DeadLetter(job_id, "EnvelopeError", "job", "unreadable", time.time())
        except EnvelopeError as exc:
            letter = _payload_letter(job_id, exc)
        dead_letters.record(self.connection, queue.name, [letter])
        log.warning("ingest_job_refused", field=letter.field)

    # -- one batch ------------------------------------------------------------------
    def execute_job(self, job: Job, queue: Queue) -> Any:
        started = time.perf_counter()
        waited_s = None
        if job.enqueued_at is not None:  # RQ keeps naive UTC datetimes
            enqueued = job.enqueued_at.replace(tzinfo=job.enqueued_at.tzinfo or UTC)
            waited_s = max(0.0, (datetime.now(UTC) - enqueued).total_seconds())
        self._execute_batch(job, queue)
        if self.batch_observer is not None:
            self.batch_observer(self._batch_jobs, time.perf_counter() - started, waited_s)

    def _execute_batch(self, job: Job, queue: Queue) -> None:
        conn = self.connection
        self.in_flight = (job.id,)
        claims.hold(conn, queue, job.id, self.name)
        requeue_expired_claims(conn, queue)
        claimed = claims.claim(conn, queue, self.max_batch - 1, self.name)
        self.in_flight = (job.id, *claimed)
        self._batch_jobs = len(self.in_flight)
        extras, refused = self._read_claimed(claimed)
        self._outcome = None
        if isinstance(job, IngestJob):
            job.batch = lambda: self._ingest(job, extras, queue.name)
        try:
            with claims.heartbeat(conn, queue, self.in_flight):
                super().execute_job(job, queue)
        finally:
            if isinstance(job, IngestJob):
                job.batch = None
        outcome, self._outcome = self._outcome, None
        jobs = [claimed_job for claimed_job, _ in extras]
        if outcome is None:
            # The batch never ran to its end (a transient failure): all of it goes back.
            self._give_back(queue, jobs)
        else:
            self._finish(queue, [j for j in jobs if j.id not in outcome.poisoned])
            refused += outcome.poisoned.values()
        with conn.pipeline(transaction=False) as pipe:
            # given-back jobs were released when given back (another worker may hold them)
            claims.release(pipe, queue, [job.id, *(letter.job_id for letter in refused)])
            pipe.execute()
        if refused:
            dead_letters.record(conn, queue.name, refused)
            log.warning("ingest_jobs_dead_lettered", queue=queue.name, jobs=len(refused))
        self.in_flight = ()

    def _ingest(
        self, job: Job, claimed: list[tuple[Job, TurnEvent]], queue_name: str
    ) -> dict[str, int]:
        """The dequeued job's turn and the claimed ones; a poison turn is isolated."""
        own_error: InvalidPayloadError | None = None
        items: list[tuple[str, TurnEvent]] = []
        try:
            if not job.args:
                raise EnvelopeError("data.args", "no payload")
            items.append((job.id, parse_payload(job.args[0])))
        except InvalidPayloadError as exc:
            own_error = exc  # the claimed turns still go in, this round
        items += [(claimed_job.id, event) for claimed_job, event in claimed]
        isolated = run_isolating(
            lambda part: self.pipeline.ingest([event for _, event in part]), items
        )
        poisoned = {
            job_id: DeadLetter(job_id, "PoisonTurnError", "turn", type(exc).__name__, time.time())
            for (job_id, _), exc in isolated.poisoned
        }
        if isolated.poisoned:
            log.warning("ingest_poison_isolated", turns=len(poisoned), writes=isolated.attempts)
        own_poison = poisoned.pop(job.id, None)
        self._outcome = _Outcome(poisoned)
        if own_error is not None:
            dead_letters.record(self.connection, queue_name, [_payload_letter(job.id, own_error)])
            raise own_error
        if own_poison is not None:
            dead_letters.record(self.connection, queue_name, [own_poison])
            raise PoisonTurnError(f"the graph write refused this turn ({own_poison.reason})")
        counts = dict.fromkeys(IngestResult(0, 0, 0, 0, 0).as_counts(), 0)
        for result in isolated.results:
            for name, value in result.as_counts().items():
                counts[name] += value
        return counts

    def _read_claimed(self, ids: list[str]) -> tuple[list[tuple[Job, TurnEvent]], list[DeadLetter]]:
        """The claimed jobs with their validated turns, and dead letters for the others."""
        with self.connection.pipeline(transaction=False) as pipe:
            for job_id in ids:
                pipe.hgetall(RQ_JOB_PREFIX + job_id)
            raws = pipe.execute()
        valid: list[tuple[Job, TurnEvent]] = []
        refused: list[DeadLetter] = []
        queue_name = self.queues[0].name
        for job_id, raw in zip(ids, raws, strict=True):
            try:
                claimed_job = read_job(
                    job_id,
                    raw,
                    connection=self.connection,
                    serializer=self.serializer,
                    job_class=IngestJob,
                )
                check_origin(claimed_job, queue_name)
                valid.append((claimed_job, parse_payload(claimed_job.args[0])))
            except InvalidPayloadError as exc:
                refused.append(_payload_letter(job_id, exc))
        return valid, refused

    def requeue_in_flight(self) -> int:
        """After this worker lost Redis mid-batch: put back at the queue's head, at once,
        what it still holds (not waiting for claim expiry), with RQ's started and
        intermediate entries of those jobs removed (a stale started entry would make RQ
        retry or fail a finished job minutes later). Writes are idempotent."""
        ids, self.in_flight = self.in_flight, ()
        if not ids:
            return 0
        count = claims.give_back_owned(self.connection, self.queues[0], ids, self.name)
        log.warning("ingest_batch_requeued_after_redis_loss", jobs=count, held=len(ids))
        return count

    def _finish(self, queue: Queue, jobs: list[Job]) -> None:
        if not jobs:
            return
        ended = rq_timestamp(time.time())
        with self.connection.pipeline(transaction=False) as pipe:
            for claimed_job in jobs:
                pipe.hset(claimed_job.key, mapping={"status": "finished", "ended_at": ended})
                ttl = claimed_job.result_ttl
                if ttl == 0:
                    pipe.delete(claimed_job.key)
                elif ttl is not None and ttl > 0:
                    pipe.expire(claimed_job.key, ttl)
            claims.release(pipe, queue, [j.id for j in jobs])
            pipe.execute()

    def _give_back(self, queue: Queue, jobs: list[Job]) -> None:
        if not jobs:
            return
        with self.connection.pipeline(transaction=True) as pipe:
            for claimed_job in reversed(jobs):
                pipe.lpush(queue.key, claimed_job.id)
                pipe.hset(claimed_job.key, "status", "queued")
            claims.release(pipe, queue, [j.id for j in jobs])
            pipe.execute()
        log.warning("ingest_batch_returned", queue=queue.name, jobs=len(jobs))
