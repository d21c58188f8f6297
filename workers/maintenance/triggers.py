"""What an ingested batch asks of the maintenance queue (SPEC §4: "trigger follow-ups").

A summary (every ``summary_every_n_turns`` turns, or at once on a semantic trigger), the
rolling context, the ownership context at a session's first turn and, with
``auto_promote``, the promotion of user turns' directives. Job ids derive from what the
job does, so a redelivered batch adds nothing and rolling-context jobs coalesce; a
batch's jobs take two round trips. docs/distill.md ("What triggers what").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import structlog
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from turngraph.schemas.errors import BackendUnavailableError
from turngraph.schemas.turn_event import Role, TurnEvent
from turngraph.workers.extraction.models import Extraction
from turngraph.workers.maintenance import jobs
from turngraph.workers.maintenance.context import DistillOptions

__all__ = [
    "POSTMORTEM_WORDS", "SEMANTIC_TRIGGER_TYPES", "FollowUps", "PlannedJob", "has_directive",
    "plan_jobs", "summary_due",
]  # fmt: skip

log = structlog.get_logger(__name__)

POSTMORTEM_WORDS = ("postmortem", "post-mortem", "post mortem", "retrospective", "root cause")

SEMANTIC_TRIGGER_TYPES = frozenset({"Decision", "Plan"})
"""Entity types whose appearance asks for a summary at once."""


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def summary_due(event: TurnEvent, extraction: Extraction, every_n_turns: int) -> str | None:
    """Why this turn asks for a summary (None: it does not)."""
    if every_n_turns > 0 and (event.turn_index + 1) % every_n_turns == 0:
        return "every_n_turns"
    if any(entity.type in SEMANTIC_TRIGGER_TYPES for entity in extraction.entities):
        return "semantic"
    lowered = event.content[:5_000].lower()
    if any(word in lowered for word in POSTMORTEM_WORDS):
        return "postmortem"
    return None


def has_directive(extraction: Extraction) -> bool:
    return any(entity.attributes.get("origin") == "directive" for entity in extraction.entities)


@dataclass(frozen=True)
class PlannedJob:
    func: Callable[..., Any]
    job_id: str
    target: dict[str, Any]
    keep_result: bool = True


def plan_jobs(
    batch: Sequence[tuple[TurnEvent, Extraction]], options: DistillOptions
) -> list[PlannedJob]:
    """The maintenance jobs a written batch asks for, in a stable order."""
    planned: list[PlannedJob] = []
    summarize: dict[str, int] = {}
    last_turn: dict[str, int] = {}
    for event, extraction in batch:
        session = event.session_id
        last_turn[session] = max(last_turn.get(session, -1), event.turn_index)
        if summary_due(event, extraction, options.summary_every_n_turns):
            summarize[session] = max(summarize.get(session, -1), event.turn_index)
        if event.turn_index == 0:
            planned.append(
                PlannedJob(
                    jobs.ownership_job, f"ownership-{_short(session)}", {"session_id": session}
                )
            )
        if options.auto_promote and event.role is Role.USER and has_directive(extraction):
            planned.append(
                PlannedJob(
                    jobs.promote_turn_job,
                    f"promote-{_short(session)}-{event.turn_index}",
                    {"session_id": session, "turn_index": event.turn_index},
                )
            )
    for session, turn_index in sorted(summarize.items()):
        planned.append(
            PlannedJob(
                jobs.summarize_session_job,
                f"summarize-{_short(session)}-{turn_index}",
                {"session_id": session, "through_turn": turn_index},
            )
        )
    for session in sorted(last_turn):
        planned.append(
            PlannedJob(
                jobs.rolling_context_job,
                f"rolling-{_short(session)}",
                {"session_id": session},
                keep_result=False,
            )
        )
    return planned


@dataclass
class FollowUps:
    """Called by the ingest pipeline after a batch is written; enqueues maintenance jobs."""

    redis_client: redis.Redis
    options: DistillOptions

    def __post_init__(self) -> None:
        self._queue = Queue(
            self.options.maintenance_queue, connection=self.redis_client, serializer=JSONSerializer
        )

    def __call__(self, batch: Sequence[tuple[TurnEvent, Extraction]]) -> int:
        """Enqueue what the batch asks for; returns how many jobs were enqueued."""
        planned = plan_jobs(batch, self.options)
        if not planned:
            return 0
        try:
            fresh = [
                job for job in planned if not Job.exists(job.job_id, connection=self.redis_client)
            ]
            if fresh:
                with self.redis_client.pipeline() as pipe:
                    self._queue.enqueue_many(
                        [
                            Queue.prepare_data(
                                job.func,
                                args=(job.target,),
                                job_id=job.job_id,
                                description=f"{job.func.__name__}({job.job_id})",
                                timeout=jobs.MAINTENANCE_JOB_TIMEOUT_S,
                                result_ttl=jobs.RESULT_TTL_S if job.keep_result else 0,
                                failure_ttl=jobs.FAILURE_TTL_S,
                                retry=jobs.retry_policy(),
                            )
                            for job in fresh
                        ],
                        pipeline=pipe,
                    )
                    pipe.execute()
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable for follow-up jobs") from exc
        if fresh:
            log.info("maintenance_jobs_enqueued", jobs=len(fresh))
        return len(fresh)
