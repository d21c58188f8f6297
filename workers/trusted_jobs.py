"""Workers run our job functions only, never a callable named by data in Redis.

RQ resolves a job's function (and its success / failure / stopped callbacks) by importing
whatever dotted name the job hash holds, so anyone able to write a job hash could make a
worker call ``os.system``. :class:`TrustedJob` is the job class every worker of ours uses:
the function must be on :data:`ALLOWED_FUNCTIONS`, called as a plain function (no
instance), and callbacks are never imported. A refused job fails at once, without
retries, with a typed reason in RQ's failed registry (``turngraph jobs failed``).
"""

from __future__ import annotations

from typing import Any

import structlog
from rq.job import Job

from turngraph.schemas.defaults import INGEST_FUNCTION
from turngraph.schemas.errors import PermanentError

log = structlog.get_logger(__name__)

ALLOWED_FUNCTIONS: frozenset[str] = frozenset({INGEST_FUNCTION})
"""Dotted names of every job function an ingest worker will run."""

MAINTENANCE_FUNCTIONS: frozenset[str] = frozenset(
    f"turngraph.workers.maintenance.jobs.{name}"
    for name in (
        "summarize_session_job",
        "compact_sweep_job",
        "rolling_context_job",
        "ownership_job",
        "promote_turn_job",
        "answer_request_job",
        "reextract_job",
    )
)
"""Job functions of the maintenance queue (distilled memory, ``workers/maintenance/jobs.py``);
a maintenance worker refuses everything else."""


class ForbiddenJobError(PermanentError):
    """A job names a function (or instance, or callback) that is not ours."""


def refusal(job: Job, allowed: frozenset[str] = ALLOWED_FUNCTIONS) -> str | None:
    """Why ``job`` must not run, or None. Never quotes the job's data (it may be chat)."""
    try:
        name = job.func_name
        instance = job.instance
    except Exception:  # undecodable data: RQ's DeserializationError and friends
        return "job data cannot be decoded"
    if name not in allowed:
        return "job function is not on the allow-list"
    if instance is not None:
        return "job names an instance; our jobs are plain functions"
    return None


class TrustedJob(Job):
    """An RQ job that only ever resolves to an allow-listed function."""

    allowed_functions: frozenset[str] = ALLOWED_FUNCTIONS

    @property
    def func(self) -> Any:
        reason = refusal(self, self.allowed_functions)
        if reason is not None:
            self.retries_left = 0  # RQ reads this when it handles the failure: no retry
            log.warning("job_refused", job_id=self.id, reason=reason)
            raise ForbiddenJobError(reason)
        return super().func

    # Our jobs carry no callbacks; a name written into a job hash is never imported.
    @property
    def success_callback(self) -> None:
        return None

    @property
    def failure_callback(self) -> None:
        return None

    @property
    def stopped_callback(self) -> None:
        return None


class MaintenanceJob(TrustedJob):
    """A job of the maintenance queue: only :data:`MAINTENANCE_FUNCTIONS` run."""

    allowed_functions = MAINTENANCE_FUNCTIONS
