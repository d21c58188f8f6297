"""An RQ worker that ingests queued turns in batches.

Stock RQ spends several Redis round trips of bookkeeping on every job (about 230 no-op
jobs/s per worker measured here), below the 500 turns/s target, while one graph
transaction of 100 turns costs about as much as one of 1 turn. So when this worker takes
a job, it also *claims* up to ``max_batch - 1`` more queued jobs in one atomic step, runs
them through one pipeline call (one transaction) with the job RQ dequeued, and finishes
them in one pipelined round trip. The dequeued job keeps RQ's own handling (success,
failure, retry); claimed jobs are bookkept here:

- a claim moves the ids from the queue into ``turngraph:claims:<queue>`` (a sorted set
  scored by when the claim expires) and marks them ``started``, atomically;
- on success they are marked ``finished`` with RQ's result TTL and the claim is dropped;
- on failure they go back to the head of the queue, in order, for another worker;
- after a crash (SIGKILL), :func:`requeue_expired_claims`, run at every worker start and
  between batches, puts expired claims back on the queue. Writes are idempotent, so a
  claimed turn that was already written is harmless when re-ingested.

The worker holds its pipeline (given at construction) and runs it itself: RQ performs the
dequeued job as an :class:`IngestJob`, whose body is the batch the worker bound to it (the
job's own turn first, then the claimed ones, each validated once). Only jobs naming the
allow-listed ingest function run; RQ's success, failure and retry handling stay as they are.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
import structlog
from rq import SimpleWorker
from rq.job import Job
from rq.queue import Queue

from producers.bounded_queue import INGEST_FUNCTION, rq_timestamp
from schemas.defaults import FAILURE_TTL_S
from schemas.errors import ConfigurationError, InvalidPayloadError, PermanentError
from schemas.keys import CLAIMS_TEMPLATE, RQ_JOB_PREFIX
from schemas.turn_event import TurnEvent
from workers.ingest.pipeline import IngestPipeline, parse_payload
from workers.trusted_jobs import TrustedJob

log = structlog.get_logger(__name__)

DEFAULT_MAX_BATCH = 100
"""Turns per graph transaction, counting the dequeued job."""

CLAIM_MARGIN_S = 60
"""A claim expires this long after the claimed job's own timeout (RQ's heartbeat margin);
an expired claim is considered abandoned (its worker died) and requeued."""

_CLAIM = """
local ids = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[2], ARGV[2], id)
  redis.call('HSET', ARGV[4] .. id, 'status', 'started', 'started_at', ARGV[3])
end
return ids
"""

_REQUEUE_EXPIRED = """
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
for i = #ids, 1, -1 do
  redis.call('LPUSH', KEYS[1], ids[i])
  redis.call('HSET', ARGV[2] .. ids[i], 'status', 'queued')
  redis.call('ZREM', KEYS[2], ids[i])
end
return #ids
"""


def _rq_now() -> str:
    return rq_timestamp(time.time())


def claim_key(queue: Queue) -> str:
    return CLAIMS_TEMPLATE.format(queue=queue.name)


def requeue_expired_claims(conn: redis.Redis, queue: Queue, now: float | None = None) -> int:
    """Put claims whose worker died back at the head of the queue; returns how many."""
    script = conn.register_script(_REQUEUE_EXPIRED)
    count = script(
        keys=[queue.key, claim_key(queue)],
        args=[now if now is not None else time.time(), RQ_JOB_PREFIX],
    )
    if count:
        log.warning("ingest_claims_requeued", queue=queue.name, jobs=int(count))
    return int(count)


class UnknownJobError(PermanentError):
    """A job on the ingest queue names a function other than the ingest entry."""


class IngestJob(TrustedJob):
    """A job as the batching worker performs it: the batch the worker bound, not an import
    of whatever function the job hash names."""

    batch: Callable[[], dict[str, int]] | None = None

    def _execute(self) -> Any:
        if self.func_name != INGEST_FUNCTION:
            self.retries_left = 0
            raise UnknownJobError("the ingest worker runs only ingest jobs")
        if self.batch is None:
            raise ConfigurationError("ingest job performed without a bound batch")
        try:
            return self.batch()
        except PermanentError:
            self.retries_left = 0  # RQ reads this when it handles the failure: no retry
            raise


class BatchingIngestWorker(SimpleWorker):
    """A :class:`rq.SimpleWorker` (no fork per job) that batches consecutive ingest jobs
    through the :class:`IngestPipeline` it is given."""

    job_class = IngestJob
    in_flight: tuple[str, ...] = ()
    """Ids of the batch being ingested (the dequeued job first); empty between batches."""

    def __init__(
        self,
        queues: Sequence[Queue],
        *,
        pipeline: IngestPipeline,
        max_batch: int = DEFAULT_MAX_BATCH,
        **kwargs: Any,
    ) -> None:
        super().__init__(list(queues), job_class=IngestJob, **kwargs)
        self.pipeline = pipeline
        self.max_batch = max_batch

    def run_maintenance_tasks(self) -> None:
        """RQ's registry cleaning, plus requeueing expired claims while the queue is idle."""
        super().run_maintenance_tasks()
        for queue in self.queues:
            requeue_expired_claims(self.connection, queue)

    def execute_job(self, job: Job, queue: Queue) -> Any:
        conn = self.connection
        self.in_flight = (job.id,)
        requeue_expired_claims(conn, queue)
        claimed = self._claim(
            queue, self.max_batch - 1, ttl_s=(job.timeout or 180) + CLAIM_MARGIN_S
        )
        self.in_flight = (job.id, *claimed)
        extras, invalid = self._payloads(claimed)
        events = [event for _, event in extras]
        if isinstance(job, IngestJob):
            job.batch = lambda: self._ingest(job, events)
        try:
            super().execute_job(job, queue)
        finally:
            if isinstance(job, IngestJob):
                job.batch = None
        jobs = [claimed_job for claimed_job, _ in extras]
        if job.get_status(refresh=True) == "finished":
            self._finish(queue, jobs, invalid)
        else:
            # The dequeued job failed (or never ran): the claimed turns go back as they were.
            self._give_back(queue, jobs)
        self._fail_invalid(queue, invalid)
        self.in_flight = ()

    def _ingest(self, job: Job, claimed: list[TurnEvent]) -> dict[str, int]:
        """The dequeued job's turn and the claimed ones, in one pipeline call."""
        if not job.args:
            raise InvalidPayloadError("ingest job has no payload")
        return self.pipeline.ingest([parse_payload(job.args[0]), *claimed]).as_counts()

    def requeue_in_flight(self) -> int:
        """After this worker lost Redis mid-batch: put its batch back at the queue's head at
        once, instead of waiting for claim expiry and RQ's abandoned-job detection. RQ may
        later retry the dequeued job once more; writes are idempotent."""
        ids, self.in_flight = self.in_flight, ()
        if not ids:
            return 0
        queue = self.queues[0]
        with self.connection.pipeline(transaction=True) as pipe:
            for job_id in reversed(ids):
                pipe.lpush(queue.key, job_id)
                pipe.hset(RQ_JOB_PREFIX + job_id, "status", "queued")
                pipe.zrem(claim_key(queue), job_id)
            pipe.execute()
        log.warning("ingest_batch_requeued_after_redis_loss", jobs=len(ids))
        return len(ids)

    def _claim(self, queue: Queue, count: int, ttl_s: float) -> list[str]:
        if count <= 0:
            return []
        script = self.connection.register_script(_CLAIM)
        ids = script(
            keys=[queue.key, claim_key(queue)],
            args=[count, time.time() + ttl_s, _rq_now(), RQ_JOB_PREFIX],
        )
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    def _payloads(self, ids: list[str]) -> tuple[list[tuple[Job, TurnEvent]], list[str]]:
        """The claimed jobs with their validated turns, and the ids of those that are not
        ingest jobs with a valid payload."""
        jobs = Job.fetch_many(ids, connection=self.connection, serializer=self.serializer)
        valid: list[tuple[Job, TurnEvent]] = []
        invalid: list[str] = []
        for job_id, claimed_job in zip(ids, jobs, strict=True):
            try:
                if claimed_job is None or not claimed_job.args:
                    raise InvalidPayloadError("claimed job has no payload")
                if claimed_job.func_name != INGEST_FUNCTION:
                    raise InvalidPayloadError("claimed job is not an ingest job")
                valid.append((claimed_job, parse_payload(claimed_job.args[0])))
            except InvalidPayloadError:
                invalid.append(job_id)
        return valid, invalid

    def _finish(self, queue: Queue, jobs: list[Job], invalid: list[str]) -> None:
        ended = _rq_now()
        with self.connection.pipeline(transaction=False) as pipe:
            for claimed_job in jobs:
                pipe.zrem(claim_key(queue), claimed_job.id)
                pipe.hset(claimed_job.key, mapping={"status": "finished", "ended_at": ended})
                ttl = claimed_job.result_ttl
                if ttl == 0:
                    pipe.delete(claimed_job.key)
                elif ttl is not None and ttl > 0:
                    pipe.expire(claimed_job.key, ttl)
            pipe.execute()

    def _give_back(self, queue: Queue, jobs: list[Job]) -> None:
        if not jobs:
            return
        with self.connection.pipeline(transaction=True) as pipe:
            for claimed_job in reversed(jobs):
                pipe.lpush(queue.key, claimed_job.id)
                pipe.hset(claimed_job.key, "status", "queued")
                pipe.zrem(claim_key(queue), claimed_job.id)
            pipe.execute()
        log.warning("ingest_batch_returned", queue=queue.name, jobs=len(jobs))

    def _fail_invalid(self, queue: Queue, invalid: list[str]) -> None:
        """Claimed jobs whose payload does not validate go to RQ's failed registry."""
        if not invalid:
            return
        now = time.time()
        with self.connection.pipeline(transaction=False) as pipe:
            for job_id in invalid:
                key = RQ_JOB_PREFIX + job_id
                pipe.zrem(claim_key(queue), job_id)
                pipe.hset(
                    key,
                    mapping={
                        "status": "failed",
                        "ended_at": _rq_now(),
                        "exc_info": "InvalidPayloadError: invalid TurnEvent",
                    },
                )
                pipe.zadd(queue.failed_job_registry.key, {job_id: now + FAILURE_TTL_S})
            pipe.execute()
        log.warning("ingest_payloads_invalid", queue=queue.name, jobs=len(invalid))
