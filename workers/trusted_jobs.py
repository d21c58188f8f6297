"""Workers run our job functions only, never a callable named by data in Redis.

RQ resolves a job's function (and its success / failure / stopped callbacks) by importing
whatever dotted name the job hash holds, so anyone able to write a job hash could make a
worker call ``os.system``. :class:`TrustedJob` is the job class every worker of ours uses
(RQ's ``job_class``; the checks are ``AllowListedJob``'s, ``workers/rq_adapter.py``):
the function must be on :data:`ALLOWED_FUNCTIONS`, called as a plain function (no
instance), and callbacks are never imported. A refused job fails at once, without
retries, with a typed reason in RQ's failed registry (``turngraph jobs failed``).
"""

from __future__ import annotations

from turngraph.schemas.defaults import INGEST_FUNCTION
from turngraph.workers.rq_adapter import AllowListedJob, ForbiddenJobError

__all__ = [
    "ALLOWED_FUNCTIONS", "MAINTENANCE_FUNCTIONS", "ForbiddenJobError", "MaintenanceJob",
    "TrustedJob",
]  # fmt: skip

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


class TrustedJob(AllowListedJob):
    """An RQ job that only ever resolves to an allow-listed ingest function."""

    allowed_functions = ALLOWED_FUNCTIONS


class MaintenanceJob(AllowListedJob):
    """A job of the maintenance queue: only :data:`MAINTENANCE_FUNCTIONS` run."""

    allowed_functions = MAINTENANCE_FUNCTIONS
