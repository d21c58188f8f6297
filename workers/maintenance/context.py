"""What maintenance jobs work with: clients, options, the optional LLM summarizer.

Built once per worker process by the application shell (``turngraph.app``) and passed to
the maintenance worker, which holds it for the jobs it performs (RQ job arguments are
JSON, so clients cannot travel with the job); job functions ask :func:`bound_distiller`. Nothing
is created at import and no module holds a client.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, cast

import redis
from redis.exceptions import LockError

from turngraph.schemas import defaults
from turngraph.schemas.errors import BackendUnavailableError, ConfigurationError, TransientError
from turngraph.schemas.keys import LOCK_PREFIX
from turngraph.workers.enrichment import EnrichmentBacklog
from turngraph.workers.extraction.models import Extractor
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.graph.distill_store import DistillStore
from turngraph.workers.rq_adapter import performing_worker

if TYPE_CHECKING:
    from turngraph.workers.extraction.llm import LLMExtractor
    from turngraph.workers.graph.store import GraphStore
    from turngraph.workers.maintenance.llm_summary import LLMSummarizer

__all__ = [
    "DEFAULT_REEXTRACT_BUDGET_S", "DEFAULT_REEXTRACT_LIMIT", "JOB_MARGIN_S", "LOCK_TIMEOUT_S",
    "LOCK_WAIT_S", "DistillOptions", "Distiller", "LockBusyError", "Reextractor",
    "bound_distiller",
]  # fmt: skip

DEFAULT_REEXTRACT_LIMIT = 200
"""Turns read back from the graph at a time (in the backlog's order)."""

DEFAULT_REEXTRACT_BUDGET_S = 240.0
"""One run's LLM work ends within this (its job timeout leaves a margin beyond)."""

JOB_MARGIN_S = 60
"""A run's job timeout (and lock) exceeds its budget by this."""

LOCK_TIMEOUT_S = 120
"""A lock outlives a stuck job by at most this long."""

LOCK_WAIT_S = 30.0
"""How long a job waits for a lock before it gives up (RQ retries it later)."""


class LockBusyError(TransientError):
    """Another worker holds the lock for too long; the job is retried later."""


@dataclass(frozen=True)
class DistillOptions:
    summary_every_n_turns: int = defaults.SUMMARY_EVERY_N_TURNS
    compact_min_summaries: int = defaults.COMPACT_MIN_SUMMARIES
    compact_after_days: float = defaults.COMPACT_AFTER_DAYS
    compact_sweep_every_s: int = defaults.COMPACT_SWEEP_EVERY_S
    auto_promote: bool = False
    recap_budget_tokens: int = defaults.RECAP_BUDGET_TOKENS
    maintenance_queue: str = defaults.MAINTENANCE_QUEUE
    reextract_every_s: int = defaults.REEXTRACT_EVERY_S


@dataclass
class Reextractor:
    """What the enrichment pass needs besides the distiller's clients: the LLM extractor
    (built with :class:`NoFallback` as its fallback), the graph store ingest writes with,
    the offline rules and the backlog's order."""

    extractor: LLMExtractor
    store: GraphStore
    offline: Extractor = field(default_factory=OfflineExtractor)
    """The offline rules, whose entities ingest stored (the LLM's answer is merged in)."""
    backlog: EnrichmentBacklog = field(default_factory=EnrichmentBacklog)
    limit: int = DEFAULT_REEXTRACT_LIMIT
    budget_s: float = DEFAULT_REEXTRACT_BUDGET_S

    @property
    def job_timeout_s(self) -> int:
        return int(self.budget_s) + JOB_MARGIN_S


@dataclass
class Distiller:
    """One per maintenance process (and per test)."""

    store: DistillStore
    redis: redis.Redis
    changes_stream: str
    options: DistillOptions = field(default_factory=DistillOptions)
    summarizer: LLMSummarizer | None = None
    reextractor: Reextractor | None = None
    """The LLM re-extraction pass's extractor and store (an LLM endpoint is configured)."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    def announce(self, entries: list[dict[str, str]]) -> None:
        """Put change entries on the stream the recall replicas tail."""
        if not entries:
            return
        try:
            with self.redis.pipeline(transaction=False) as pipe:
                for fields in entries:
                    pipe.xadd(
                        self.changes_stream,
                        cast(Any, fields),
                        maxlen=defaults.CHANGES_MAXLEN,
                        approximate=True,
                    )
                pipe.execute()
        except redis.RedisError as exc:
            # The graph write is committed and idempotent; RQ retries the whole job.
            raise BackendUnavailableError("redis unavailable after graph write") from exc

    @contextlib.contextmanager
    def lock(
        self, name: str, timeout_s: float = LOCK_TIMEOUT_S, *, blocking: bool = True
    ) -> Iterator[None]:
        """A Redis lock (``SET NX PX``, token-checked release) around one unit of work
        that ends within ``timeout_s``; waited for up to ``LOCK_WAIT_S`` unless not
        ``blocking`` (then :class:`LockBusyError` at once)."""
        lock = self.redis.lock(LOCK_PREFIX + name, timeout=timeout_s, blocking_timeout=LOCK_WAIT_S)
        try:
            acquired = lock.acquire(blocking=blocking)
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable for a lock") from exc
        if not acquired:
            raise LockBusyError("another worker holds the lock")
        try:
            yield
        finally:
            with contextlib.suppress(LockError, redis.RedisError):
                lock.release()


def bound_distiller() -> Distiller:
    """The distiller of the maintenance worker performing the current job
    (``performing_worker``): jobs carry JSON arguments only, the worker lends the clients."""
    distiller = getattr(performing_worker(), "distiller", None)
    if not isinstance(distiller, Distiller):
        raise ConfigurationError(
            "maintenance jobs run in `turngraph worker maintenance`, not a stock RQ worker"
        )
    return distiller
