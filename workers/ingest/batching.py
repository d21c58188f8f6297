"""The ingest worker: a stock RQ worker whose jobs are batches of turns.

``ingest_batch`` reaches the worker performing it (``workers/rq_adapter.py``) and runs its
turns through :meth:`IngestWorker.ingest`, which keeps the job's heartbeat short
(``job_heartbeat_ttl_s``) so RQ hands a SIGKILLed worker's batch to its ``Retry``.
Hostile jobs and turns are dead-lettered (``envelope.py``, ``dead_letters.py``), a batch
failing for a permanent reason is bisected (``isolation.py``): docs/architecture.md
("Delivery").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import redis
import structlog
from rq.job import Job
from rq.queue import Queue

from turngraph.schemas.errors import BackendUnavailableError, InvalidPayloadError
from turngraph.schemas.keys import QUEUE_STATS_TEMPLATE
from turngraph.workers import batch_store
from turngraph.workers.ingest import dead_letters
from turngraph.workers.ingest.dead_letters import DeadLetter
from turngraph.workers.ingest.envelope import JOB_ID, EnvelopeError, check_job, check_job_id
from turngraph.workers.ingest.isolation import run_isolating
from turngraph.workers.ingest.pipeline import IngestPipeline, IngestResult, parse_payload
from turngraph.workers.rq_adapter import Refusal, ScreeningWorker
from turngraph.workers.tombstones import admitted_epoch

__all__ = ["HEARTBEAT_TTL_S", "IngestWorker", "run_batch"]

log = structlog.get_logger(__name__)

HEARTBEAT_TTL_S = 10
"""A running job's started-registry entry lives this long unless renewed."""

BEAT_S = 3.0
"""How often a working worker renews it."""

BatchObserver = Callable[[int, float, float | None], None]
"""Told of every batch: its turns, the seconds it took, and how long its job had waited
in the queue (``None`` when unknown); the metrics histograms."""


def _payload_letter(event_id: str, exc: InvalidPayloadError) -> DeadLetter:
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
    """Ingest ``payloads`` (the turns, or a reference to the batch's stored turns, read
    here); unreadable ones and poison turns are dead-lettered, turns of scopes forgotten
    since ``admitted_epoch`` skipped (both counted in the queue's stats), the rest
    written. A transient failure propagates (RQ retries the job); after a run, stored
    turns expire with the job's hash."""
    items: list[tuple[str, Any]] = []
    letters: list[DeadLetter] = []
    stored = batch_store.is_reference(payloads)
    if stored:
        try:
            items, refused = batch_store.load(conn, job_id, payloads)  # type: ignore[arg-type]
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable reading the batch") from exc
        letters = [DeadLetter(*refusal, time.time()) for refusal in refused]
    for index, payload in enumerate(payloads if isinstance(payloads, list) else []):
        try:
            event = parse_payload(payload)
            items.append((event.event_id, event))
        except InvalidPayloadError as exc:
            letters.append(_payload_letter(_event_id(payload, job_id, index), exc))
    if not stored and not isinstance(payloads, list):
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
    if stored:
        batch_store.release(conn, job_id)
    return counts


class IngestWorker(ScreeningWorker):
    """A :class:`rq.SimpleWorker` (no fork per job, warm graph connections) that runs
    ingest batch jobs through the :class:`IngestPipeline` it is given; every job it
    dequeues is read through ``envelope`` first."""

    job_heartbeat_ttl_s = HEARTBEAT_TTL_S

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

    def screen(self, job_id: str, job: Job | None, queue: str) -> Refusal | None:
        """A forged id, a job RQ could not restore (``job`` None), else whether the job
        calls our function with one list, from the queue it was on."""
        try:
            check_job_id(job_id)
            if job is None:
                return Refusal(job_id, "job", "unreadable")
            check_job(job, queue)
        except EnvelopeError as exc:
            return Refusal(job_id, exc.field, exc.reason)
        return None

    def refused(self, queue: str, refusals: list[Refusal]) -> None:
        letters = [
            DeadLetter(r.job_id, "EnvelopeError", r.field, r.reason, time.time()) for r in refusals
        ]
        dead_letters.record(self.connection, queue, letters)

    def ingest(self, job: Job, payloads: Sequence[Any]) -> dict[str, int]:
        """Run one batch job's turns (``ingest_batch`` calls it), its started-registry
        entry kept alive meanwhile; the batch observer is told how it went."""
        started = time.perf_counter()
        waited_s = None
        if job.enqueued_at is not None:  # RQ keeps naive UTC datetimes
            enqueued = job.enqueued_at.replace(tzinfo=job.enqueued_at.tzinfo or UTC)
            waited_s = max(0.0, (datetime.now(UTC) - enqueued).total_seconds())
        try:
            with self._beating(job):
                epoch = admitted_epoch(job)
                return run_batch(
                    self.pipeline, self.connection, job.origin, payloads, job.id, epoch
                )
        finally:
            if self.batch_observer is not None:
                turns = len(payloads) if isinstance(payloads, list) else 0
                if batch_store.is_reference(payloads):
                    turns = payloads["turns"]  # type: ignore[call-overload]
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
