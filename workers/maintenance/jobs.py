"""RQ job functions of the maintenance queue. Arguments are JSON (hashed scope keys and
numbers only); the clients come from the distiller the maintenance worker binds to the
job (``context.bound_distiller``), or the ``distiller`` a caller passes in directly.

Transient errors propagate and RQ retries the job with back-off (one retry layer); a
permanent one (bad arguments, a broken configuration) fails it at once.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any, TypeVar

import redis
import structlog
from rq import Queue, Retry, get_current_job
from rq.serializers import JSONSerializer

from turngraph.producers.request_reply import push_message
from turngraph.schemas.defaults import (
    DISTILL_REPLY_TTL_S,
    FAILURE_TTL_S,
    RESULT_TTL_S,
    RETRIES,
    RETRY_INTERVALS_S,
)
from turngraph.schemas.distill import DistillRequest, DistillResponse
from turngraph.schemas.errors import (
    BackendUnavailableError,
    ErrorCode,
    InvalidPayloadError,
    PermanentError,
    TransientError,
)
from turngraph.schemas.keys import ENRICH_REQUESTED
from turngraph.workers.maintenance import (
    answers,
    compaction,
    context,
    promotion,
    reextract,
    rolling,
    summaries,
)

__all__ = [
    "ENRICH_JOB_PREFIX", "MAINTENANCE_JOB_TIMEOUT_S", "REEXTRACT_JOB_PREFIX", "SWEEP_JOB_PREFIX",
    "answer_request_job", "compact_sweep_job", "ownership_job", "promote_turn_job",
    "reextract_job", "request_enrichment", "retry_policy", "rolling_context_job",
    "schedule_reextract", "schedule_sweep", "summarize_session_job",
]  # fmt: skip

log = structlog.get_logger(__name__)

T = TypeVar("T")

SWEEP_JOB_PREFIX = "turngraph-compact-sweep-"
"""Job id prefix of the periodic compaction sweep; the suffix is its time slot, so every
maintenance worker scheduling the next sweep schedules the same job."""

REEXTRACT_JOB_PREFIX = "turngraph-reextract-"
"""Job id prefix of the periodic LLM enrichment pass (suffix: its time slot)."""

ENRICH_JOB_PREFIX = "turngraph-enrich-"
"""Job id prefix of an enrichment run asked for at once (suffix: when)."""

MAINTENANCE_JOB_TIMEOUT_S = 600


@contextmanager
def _permanent_fails_once() -> Iterator[None]:
    try:
        yield
    except PermanentError:
        job = get_current_job()
        if job is not None:
            job.retries_left = 0  # RQ reads this on the job it is performing
        raise


def _field(target: dict[str, Any], name: str, kind: type[T]) -> T:
    value = target.get(name)
    if not isinstance(value, kind) or isinstance(value, bool):
        raise InvalidPayloadError(f"job argument {name} is missing or not a {kind.__name__}")
    return value


def summarize_session_job(
    target: dict[str, Any], *, distiller: context.Distiller | None = None
) -> dict[str, int]:
    """The session's next automatic summaries (``target``: ``session_id`` and optional
    ``through_turn``); a topic that reached its threshold is compacted in the same job.

    Arguments are objects carrying their scope keys, so ``forget`` finds queued jobs."""
    with _permanent_fails_once():
        session_id = _field(target, "session_id", str)
        through_turn = target.get("through_turn")
        if through_turn is not None:
            through_turn = _field(target, "through_turn", int)
        distiller = distiller or context.bound_distiller()
        made = summaries.summarize_session(distiller, session_id, through_turn=through_turn)
        compacted = 0
        for workspace, topic_id in sorted({(s.workspace, s.topic_id) for s in made}):
            if compaction.compact_topic(distiller, workspace, topic_id, force=False):
                compacted += 1
        return {"summaries": len(made), "compacted": compacted}


def compact_sweep_job(
    reschedule: bool = True, *, distiller: context.Distiller | None = None
) -> dict[str, int]:
    """The periodic sweep: compact every due topic, then schedule the next sweep."""
    with _permanent_fails_once():
        distiller = distiller or context.bound_distiller()
        written = compaction.compact_due(distiller)
        if reschedule:
            job = get_current_job()
            if job is not None and job.connection is not None:
                schedule_sweep(
                    Queue(job.origin, connection=job.connection, serializer=JSONSerializer),
                    distiller.options.compact_sweep_every_s,
                )
        return {"compacted": len(written)}


def reextract_job(
    reschedule: bool = True, *, distiller: context.Distiller | None = None
) -> dict[str, int]:
    """The LLM enrichment pass (``workers/maintenance/reextract.py``): turns of the
    backlog asked of the LLM, its answer merged in. ``reschedule``: the periodic run,
    which schedules the next. A run that made progress and left turns asks for another
    at once. Nothing to do (and nothing scheduled) without an LLM endpoint; nothing
    either while another worker's run holds the lock (that run takes the turns)."""
    with _permanent_fails_once():
        distiller = distiller or context.bound_distiller()
        reextractor = distiller.reextractor
        if reextractor is None:
            return {"skipped": 1}
        job = get_current_job()
        queue = None
        if job is not None and job.connection is not None:
            queue = Queue(job.origin, connection=job.connection, serializer=JSONSerializer)
        with contextlib.suppress(redis.RedisError):
            distiller.redis.delete(ENRICH_REQUESTED)  # turns stored from now on ask again
        result = reextract.reextract_pending(distiller, reextractor)
        if queue is not None and reschedule:
            schedule_reextract(
                queue, distiller.options.reextract_every_s, job_timeout_s=reextractor.job_timeout_s
            )
        if result is None:
            return {"busy": 1}
        progressed = result.succeeded + result.given_up + result.missing
        if queue is not None and result.pending and progressed:
            request_enrichment(distiller.redis, queue.name, reextractor.job_timeout_s)
        return result.as_counts()


def request_enrichment(conn: redis.Redis, queue_name: str, job_timeout_s: int) -> bool:
    """Ask for an enrichment run now, unless one is asked for and not started yet (an
    ingested batch, a run that left turns); True when this call enqueued it."""
    try:
        if not conn.set(ENRICH_REQUESTED, b"1", nx=True, ex=job_timeout_s):
            return False
        Queue(queue_name, connection=conn, serializer=JSONSerializer).enqueue(
            reextract_job,
            False,
            job_id=f"{ENRICH_JOB_PREFIX}{time.time_ns()}",
            description="enrich()",
            result_ttl=0,
            failure_ttl=FAILURE_TTL_S,
            job_timeout=job_timeout_s,
        )
    except redis.RedisError as exc:
        raise BackendUnavailableError("redis unavailable to ask for enrichment") from exc
    return True


def rolling_context_job(
    target: dict[str, Any], *, distiller: context.Distiller | None = None
) -> dict[str, int]:
    """Bring a session's rolling context up to date (``session_id``)."""
    with _permanent_fails_once():
        state = rolling.update_rolling(
            distiller or context.bound_distiller(), _field(target, "session_id", str)
        )
        return {"tokens": state.tokens if state else 0}


def ownership_job(
    target: dict[str, Any], *, distiller: context.Distiller | None = None
) -> dict[str, int]:
    """Write the ownership context of a session and its workspace, once (``session_id``)."""
    with _permanent_fails_once():
        written = promotion.ownership_context(
            distiller or context.bound_distiller(), _field(target, "session_id", str)
        )
        return {"written": written}


def promote_turn_job(
    target: dict[str, Any], *, distiller: context.Distiller | None = None
) -> dict[str, int]:
    """Auto-promote the memory directives of one user turn (``session_id``,
    ``turn_index``); secret-looking ones are refused and counted."""
    with _permanent_fails_once():
        return promotion.auto_promote_turn(
            distiller or context.bound_distiller(),
            _field(target, "session_id", str),
            _field(target, "turn_index", int),
        )


def answer_request_job(
    request: dict[str, Any], *, distiller: context.Distiller | None = None
) -> dict[str, bool]:
    """Answer one on-demand request (admitted by ``asks``) on its reply key; never retried:
    the client waits only until its deadline."""
    parsed = DistillRequest.model_validate(request)
    distiller = distiller or context.bound_distiller()
    try:
        response = answers.answer(distiller, parsed)
    except TransientError:
        response = DistillResponse.failure(
            parsed.request_id,
            ErrorCode.BACKEND_UNAVAILABLE,
            "memory is busy or unavailable right now",
            "retry in a moment",
        )
    except Exception as exc:  # a reply must go out whatever happened
        log.error("distill_request_failed", error=type(exc).__name__)
        response = DistillResponse.failure(
            parsed.request_id,
            ErrorCode.INTERNAL_ERROR,
            "the request failed",
            "retry; if it persists, report it with the maintenance worker's log",
        )
    if parsed.reply_to:
        push_message(distiller.redis, parsed.reply_to, response, DISTILL_REPLY_TTL_S)
    return {"success": response.success}


def retry_policy() -> Retry:
    return Retry(max=RETRIES, interval=list(RETRY_INTERVALS_S))


def schedule_reextract(
    queue: Queue,
    every_s: int,
    now: datetime | None = None,
    *,
    job_timeout_s: int = MAINTENANCE_JOB_TIMEOUT_S,
) -> str:
    """Schedule the next LLM re-extraction run, idempotent within one time slot (every
    maintenance worker scheduling it schedules the same job); ``job_timeout_s`` is the
    run's budget plus a margin. Returns its job id."""
    return _schedule_slot(
        queue, reextract_job, REEXTRACT_JOB_PREFIX, "reextract()", every_s, now, job_timeout_s
    )


def schedule_sweep(queue: Queue, every_s: int, now: datetime | None = None) -> str:
    """Schedule the next compaction sweep (RQ's scheduler, which maintenance workers run,
    enqueues it on time); idempotent within one time slot. Returns its job id."""
    return _schedule_slot(
        queue, compact_sweep_job, SWEEP_JOB_PREFIX, "compact_sweep()", every_s, now
    )


def _schedule_slot(
    queue: Queue,
    function: Callable[..., dict[str, int]],
    prefix: str,
    description: str,
    every_s: int,
    now: datetime | None,
    job_timeout_s: int = MAINTENANCE_JOB_TIMEOUT_S,
) -> str:
    now = now or datetime.now(UTC)
    slot = int(now.timestamp() // every_s) + 1
    job_id = f"{prefix}{slot}"
    when = datetime.fromtimestamp(slot * every_s, UTC)
    queue.enqueue_at(
        when,
        function,
        job_id=job_id,
        description=description,
        result_ttl=RESULT_TTL_S,
        failure_ttl=FAILURE_TTL_S,
        job_timeout=job_timeout_s,
    )
    log.info("maintenance_job_scheduled", job_id=job_id, in_s=round((when - now).total_seconds()))
    return job_id
