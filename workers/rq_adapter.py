"""The one module that changes RQ's behaviour, for RQ ``>=2.12,<3`` (``pyproject.toml``).

The rest uses RQ's documented surface (``Queue``, ``Job``, the registries' methods, a
worker's ``job_class``/``serializer``/``exception_handlers``). Each override here is named
in :data:`ADAPTED` with its reason (``tests/unit/test_rq_private_names.py`` holds the rest
to that); ``tests/integration/test_rq_versions.py`` runs ``test_rq_internals.py``, which
pins it, against the lowest and the highest RQ allowed. Jobs reach the worker performing
them with :func:`performing_worker` (RQ has ``get_current_job``, whose ``worker_name`` names
it); a worker's name carries the hash of its configuration (:func:`worker_config`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import uuid
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import FrameType
from typing import Any

import redis
import structlog
from rq import SimpleWorker
from rq.exceptions import NoSuchJobError, StopRequested
from rq.job import Job, JobStatus, get_current_job
from rq.queue import Queue
from rq.worker import WorkerStatus

from turngraph.schemas.defaults import FAILURE_TTL_S
from turngraph.schemas.errors import PermanentError

__all__ = [
    "ADAPTED", "AllowListedJob", "ForbiddenJobError", "Refusal", "ScreeningWorker",
    "StoppableWorker", "performing_worker", "scheduler_process", "worker_config",
]  # fmt: skip

log = structlog.get_logger(__name__)

ADAPTED: Mapping[str, str] = {
    "AllowListedJob.func": "RQ imports any dotted name a job hash holds; no documented hook "
    "allow-lists it (a serializer's refusal would still be retried: retries_left = 0 here)",
    "AllowListedJob.success_callback": "callback names sit beside the data and RQ imports "
    "them; no documented hook sees them: never imported",
    "AllowListedJob.failure_callback": "as success_callback",
    "AllowListedJob.stopped_callback": "as success_callback",
    "StoppableWorker.request_stop": "RQ keeps no public record that a stop was asked for, or "
    "when; supervise() and the cold stop read it",
    "StoppableWorker.heartbeat": "RQ raises StopRequested wherever the main thread is and "
    "Python can drop it (a finaliser); no documented hook runs between two idle waits (the "
    "first thing each dequeue does): raised again there",
    "StoppableWorker.stop_scheduler": "RQ joins its scheduler process without a timeout; a "
    "SIGTERM it loses hangs the stop: resent, then killed",
    "ScreeningWorker.get_heartbeat_ttl": "RQ adds 60 s to every started-registry entry (no "
    "setting lowers it): a SIGKILLed worker's batch is retried within seconds instead",
    "ScreeningWorker.request_force_stop": "RQ's cold stop raises SystemExit into the job and "
    "waits for its LLM calls; the job fails into its Retry at once instead",
    "ScreeningWorker.run_maintenance_tasks": "RQ drops ids it cannot fetch from its "
    "intermediate list without a word, and retries a stuck job after 60 s; no hook there",
    "ScreeningWorker.dequeue_job_and_maintain_ttl": "a job hash RQ cannot restore raises out "
    "of its dequeue and ends the worker (a crash loop); no documented hook sees it",
}
"""Every RQ method overridden in this module (``Class.method``), with the reason."""

STOP_CHECK_S = 2
"""An idle worker's longest wait on the queue: how soon a stop whose exception was lost
is carried out, and maintenance runs on time (RQ's default is minutes)."""

WORKER_TTL_S = STOP_CHECK_S + 15
"""RQ's ``worker_ttl``: RQ waits on an idle queue this less 15 s (``dequeue_timeout``), so
:data:`STOP_CHECK_S`; a worker's key outlives its last heartbeat by this plus 60 s."""

SCHEDULER_RESEND_S = 1.0
"""How long a stopping worker waits for its scheduler process before signalling again."""

SCHEDULER_KILL_S = 10.0
"""After this long the scheduler process is killed (its locks expire on their own)."""

STUCK_S = 10
"""A job this long in RQ's intermediate list, never started, is retried (RQ waits 60 s)."""

_workers: weakref.WeakValueDictionary[str, Any] = weakref.WeakValueDictionary()
"""The workers of ours in this process, by name."""


def performing_worker() -> Any:
    """The worker of ours performing the current job (None outside one): the one RQ's
    ``get_current_job`` names (RQ sets ``worker_name`` before a job runs)."""
    job = get_current_job()
    return _workers.get(job.worker_name) if job is not None and job.worker_name else None


def worker_config(worker: Any) -> str | None:
    """The configuration hash a worker of ours carries in its name, or None."""
    name, _, fingerprint = str(worker.name).rpartition(".")
    return fingerprint if name else None


def scheduler_process(worker: Any) -> Any:
    """The process RQ forked to run ``worker``'s scheduler, or None (RQ keeps it in the
    scheduler's private ``_process``; its own ``Worker.stop_scheduler`` reads it so)."""
    scheduler = getattr(worker, "scheduler", None)
    return getattr(scheduler, "_process", None) if scheduler is not None else None


class ForbiddenJobError(PermanentError):
    """A job names a function (or instance, or callback) that is not ours."""


class AllowListedJob(Job):
    """An RQ job that only ever resolves to one of ``allowed_functions``."""

    allowed_functions: frozenset[str] = frozenset()

    def refusal(self) -> str | None:
        """Why the job must not run, or None. Never quotes its data (it may be chat)."""
        try:
            name, instance = self.func_name, self.instance
        except Exception:  # undecodable data: RQ's DeserializationError and friends
            return "job data cannot be decoded"
        if name not in self.allowed_functions:
            return "job function is not on the allow-list"
        if instance is not None:
            return "job names an instance; our jobs are plain functions"
        return None

    def stored_problem(self) -> tuple[str, str] | None:
        """A restored field RQ would fail on later, or a callback named: (field, reason).
        RQ's ``restore`` keeps what ``dependency_ids`` decodes to, list or not, and keeps
        the callbacks' names in private attributes."""
        ids = self._dependency_ids
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            return ("dependency_ids", "not a list of job ids")
        for kind in ("success", "failure", "stopped"):
            if getattr(self, f"_{kind}_callback_name", None):
                return (f"{kind}_callback_name", "callbacks are not allowed")
        return None

    @property
    def func(self) -> Any:
        reason = self.refusal()
        if reason is not None:
            self.retries_left = 0  # RQ reads this when it handles the failure: no retry
            log.warning("job_refused", job_id=self.id, reason=reason)
            raise ForbiddenJobError(reason)
        return super().func

    @property
    def success_callback(self) -> None:
        return None

    @property
    def failure_callback(self) -> None:
        return None

    @property
    def stopped_callback(self) -> None:
        return None


def _never() -> bool:
    return False


class StoppableWorker(SimpleWorker):
    """A :class:`rq.SimpleWorker` whose ``stop_requested`` is set by RQ's stop signals,
    and that stops even when the exception a signal raised was lost.

    ``pending_stop`` tells whether a stop was asked for before ``work()`` installed RQ's
    handlers. RQ stops an idle worker by raising ``StopRequested`` wherever the main
    thread is, which can be a finaliser where Python only prints it: so an idle worker
    wakes every ``STOP_CHECK_S`` and a stop asked for but not carried out is raised again
    at each idle heartbeat (RQ's dequeue beats first, then between two waits).
    """

    stop_requested: bool = False
    stop_requested_at: float | None = None
    """When the first stop signal came (``time.monotonic``): RQ ignores a second one
    within a second, and so does a cold shutdown."""
    pending_stop: Callable[[], bool] = staticmethod(_never)

    def __init__(self, *args: Any, config_fingerprint: str = "", **kwargs: Any) -> None:
        """``config_fingerprint``: the hash of its configuration
        (``turngraph/worker_config.py``), in its name for ``turngraph doctor`` to compare."""
        if config_fingerprint and not kwargs.get("name"):
            kwargs["name"] = f"{uuid.uuid4().hex}.{config_fingerprint}"
        kwargs.setdefault("worker_ttl", WORKER_TTL_S)
        super().__init__(*args, **kwargs)
        _workers[self.name] = self

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stop_requested = True
        self.stop_requested_at = time.monotonic()
        super().request_stop(signum, frame)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if pipeline is None and self.get_state() == WorkerStatus.IDLE:
            self._stop_if_asked()  # between two waits on the queue
        super().heartbeat(timeout, pipeline)

    def _stop_if_asked(self) -> None:
        """Idle, RQ's stop raises ``StopRequested``; busy, it lets the job finish."""
        if self.stop_requested and self.get_state() != WorkerStatus.BUSY:
            raise StopRequested()  # asked for, and its exception lost
        if self.pending_stop() and not self.stop_requested:
            self.request_stop(signal.SIGTERM, None)

    def stop_scheduler(self) -> None:
        """Stop the scheduler process RQ forked, however the signal fares: RQ sends one
        SIGTERM and joins without a timeout, and a signal reaching the child before
        CPython's after-fork handling is dropped. Sent again every ``SCHEDULER_RESEND_S``,
        killed after ``SCHEDULER_KILL_S`` (a scheduler holds nothing a kill loses)."""
        process = scheduler_process(self)
        if process is None or not process.pid or process.exitcode is not None:
            return
        deadline = time.monotonic() + SCHEDULER_KILL_S
        while process.exitcode is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGTERM)
            process.join(SCHEDULER_RESEND_S)
        if process.exitcode is None:
            self.log.warning("Worker %s: scheduler did not stop, killing it", self.name)
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGKILL)
            process.join()


@dataclass(frozen=True)
class Refusal:
    """A queued job a worker will not run; ``field`` names the part that is wrong."""

    job_id: str
    field: str
    reason: str


class ScreeningWorker(StoppableWorker):
    """A :class:`StoppableWorker` that reads every job it dequeues through :meth:`screen`
    and hands what it will not run to :meth:`refused` (failed, expiring after the failure
    TTL); a job hash RQ cannot read is refused rather than crashing the worker."""

    job_heartbeat_ttl_s: int | None = None
    """A running job's started-registry entry lives this long unless renewed (RQ's
    ``maintain_heartbeats``); None keeps RQ's."""

    def screen(self, job_id: str, job: Job | None, queue: str) -> Refusal | None:
        """Why the job must not run (``job`` is None when RQ could not restore it)."""
        return None if job is not None else Refusal(job_id, "job", "unreadable")

    def refused(self, queue: str, refusals: list[Refusal]) -> None:
        """Told of the jobs refused (already taken off RQ's lists)."""

    def get_heartbeat_ttl(self, job: Job) -> int:
        return self.job_heartbeat_ttl_s or super().get_heartbeat_ttl(job)

    def request_force_stop(self, signum: int, frame: FrameType | None) -> None:
        """Cold shutdown (a second SIGTERM or SIGINT, a second or more after the first):
        mid-job, the job fails at once through RQ's ``handle_job_failure`` (its ``Retry``
        runs it again) and the process leaves, where RQ would raise ``SystemExit`` into
        the job and wait for its LLM calls. Idle, RQ exits."""
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
        """A job dequeued just as Redis died never reaches the started registry: RQ's
        ``IntermediateQueue.cleanup`` fails it into its ``Retry`` a minute after first
        seeing it; the same steps after :data:`STUCK_S`."""
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
                refusal = self.screen(str(job_id), None, queue.name)
                self._refuse(queue, refusal or Refusal(str(job_id), "job", "unreadable"))
                continue
            if result is None:  # burst mode, the queue ran dry: nothing left behind
                for queue in self.queues:
                    self._refuse_skipped(queue, None)
                return None
            job, queue = result
            self._refuse_skipped(queue, job.id)
            refusal = self.screen(job.id, job, queue.name)
            if refusal is not None:
                self._refuse(queue, refusal)
                continue
            return result

    def _refuse(self, queue: Queue, refusal: Refusal) -> None:
        """Take a job off RQ's intermediate list; a job hash left behind is marked failed
        and expires after the failure TTL (RQ's ``set_status`` and ``cleanup``)."""
        queue.intermediate_queue.remove(refusal.job_id)
        if refusal.field != "id" and Job.exists(refusal.job_id, self.connection):
            job = Job(refusal.job_id, connection=self.connection)
            with self.connection.pipeline(transaction=False) as pipe:
                job.set_status(JobStatus.FAILED, pipe)
                job.cleanup(FAILURE_TTL_S, pipe, remove_from_queue=False)
                pipe.execute()
        self.refused(queue.name, [refusal])
        log.warning("ingest_job_refused", field=refusal.field)

    def _refuse_skipped(self, queue: Queue, current: str | None) -> None:
        """Refuse the ids RQ moved to its intermediate list and then skipped without a
        word (no job hash, or one without ``data``): they would vanish, or come back for
        ever. A data-less hash is deleted (``Job.delete``)."""
        refusals = []
        for job_id in queue.intermediate_queue.get_job_ids():
            if job_id == current:
                continue
            try:
                Job.fetch(job_id, connection=self.connection, serializer=self.serializer)
                continue
            except NoSuchJobError:
                pass
            except Exception:  # a hash RQ cannot restore: its dequeue refuses that one
                continue
            if Job.exists(job_id, self.connection):
                refusals.append(Refusal(job_id, "data", "missing"))
                Job(job_id, connection=self.connection).delete(remove_from_queue=False)
            else:
                refusals.append(Refusal(job_id, "job", "no job hash"))
            queue.intermediate_queue.remove(job_id)
        if refusals:
            self.refused(queue.name, refusals)
            log.warning("ingest_jobs_refused", queue=queue.name, jobs=len(refusals), field="job")
