"""The one module that knows RQ's internals: its Redis layout and its private names.

Everything else uses RQ's public API (``Queue``, ``Job.fetch``, registries' ``key``,
``Retry``) or calls this module. What is here is what RQ does not offer publicly and we
rely on:

- RQ's key names (``rq:queue:<name>``, ``rq:job:<id>``, ...), for forgetting a scope's
  waiting jobs, the maintenance triggers' duplicate check and ``turngraph jobs``;
- the scheduler process RQ forks for a worker (RQ keeps it in a private attribute).

``tests/integration/test_rq_internals.py`` pins each of these against RQ itself, and
``tests/integration/test_rq_versions.py`` runs those tests against the lowest and the
highest RQ that ``pyproject.toml`` allows; ``tests/unit/test_rq_private_names.py`` fails
when a private RQ name is used anywhere else. No ``rq`` import here (producers never
import RQ): what RQ hands us is duck-typed.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

__all__ = [
    "RQ_FAILED_PREFIX",
    "RQ_JOB_PREFIX",
    "RQ_QUEUES_KEY",
    "RQ_QUEUE_PREFIX",
    "rq_timestamp",
    "scheduler_process",
]

RQ_QUEUE_PREFIX = "rq:queue:"
"""RQ's key prefix of a queue's list (``Queue(name).key``)."""

RQ_QUEUES_KEY = "rq:queues"
"""RQ's set of known queues (``Queue.redis_queues_keys``); workers and ``rq info`` read it."""

RQ_JOB_PREFIX = "rq:job:"
"""RQ's key prefix of a job hash (``Job.key_for(id)``)."""

RQ_FAILED_PREFIX = "rq:failed:"
"""RQ's key prefix of a queue's failed-job registry (``FailedJobRegistry(name).key``)."""

_RQ_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"


def rq_timestamp(epoch_s: float) -> str:
    """A time in RQ's own format (``rq.utils.utcformat``)."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime(_RQ_TIME_FORMAT)


def scheduler_process(worker: Any) -> Any:
    """The process RQ forked to run ``worker``'s scheduler, or None.

    RQ keeps it in the scheduler's private ``_process`` and offers no public accessor
    (``Worker.stop_scheduler`` reads it the same way)."""
    scheduler = getattr(worker, "scheduler", None)
    return getattr(scheduler, "_process", None) if scheduler is not None else None
