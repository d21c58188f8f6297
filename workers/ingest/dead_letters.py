"""Dead letters: turns the ingest worker refused (unreadable payload) or isolated as poison.

Each gets one record in ``turngraph:dead:<queue>`` keyed by its event id (error type, the
field, a reason, when; never chat text) and is counted in the queue's stats
(``dead_lettered``); no ingested marker is set, so the same event may be published again.
RQ's own failed registry keeps the batch jobs RQ failed itself (retries exhausted);
``turngraph jobs`` shows both and requeues the latter through RQ's public API.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any

import redis
from rq import Queue
from rq.job import Job
from rq.registry import FailedJobRegistry
from rq.serializers import JSONSerializer

from turngraph.producers.bounded_queue import delete_admitted
from turngraph.schemas.defaults import FAILURE_TTL_S, JOB_TIMEOUT_S
from turngraph.schemas.keys import DEAD_LETTERS_TEMPLATE, QUEUE_STATS_TEMPLATE
from turngraph.workers.ingest.envelope import EnvelopeError
from turngraph.workers.ingest.job import batch_job

__all__ = [
    "DeadLetter", "FailedJob", "dead_letter_key", "failed_jobs", "kept_turns_key", "purge", "read",
    "record", "requeue",
]  # fmt: skip


@dataclass(frozen=True)
class DeadLetter:
    """Why one job will not run; ``field`` names the part that is wrong."""

    job_id: str
    error: str
    field: str
    reason: str
    at: float


def dead_letter_key(queue_name: str) -> str:
    return DEAD_LETTERS_TEMPLATE.format(queue=queue_name)


def kept_turns_key(queue_name: str) -> str:
    """The turns of poison dead letters, kept for ``turngraph jobs requeue`` (as RQ keeps a
    failed job's data) until the failure TTL."""
    return dead_letter_key(queue_name) + ":turns"


def record(
    conn: redis.Redis,
    queue_name: str,
    letters: Iterable[DeadLetter],
    turns: dict[str, Any] | None = None,
) -> int:
    """Write the dead letters (and the ``turns`` of those that can be requeued, by id) and
    count them, in one transaction; returns how many."""
    records: dict[Any, Any] = {letter.job_id: json.dumps(asdict(letter)) for letter in letters}
    if not records:
        return 0
    with conn.pipeline(transaction=True) as pipe:
        pipe.hset(dead_letter_key(queue_name), mapping=records)
        if turns:
            kept = {key: json.dumps(turn) for key, turn in turns.items()}
            pipe.hset(kept_turns_key(queue_name), mapping=kept)  # type: ignore[arg-type]
            pipe.expire(kept_turns_key(queue_name), FAILURE_TTL_S)
        delete_admitted(pipe, list(records))  # a dead turn may be published again
        pipe.hincrby(QUEUE_STATS_TEMPLATE.format(queue=queue_name), "dead_lettered", len(records))
        pipe.execute()
    return len(records)


def read(conn: redis.Redis, queue_name: str) -> Iterator[DeadLetter]:
    """Every dead letter of ``queue_name``, oldest first."""
    letters = []
    for raw in conn.hvals(dead_letter_key(queue_name)):
        try:
            letters.append(DeadLetter(**json.loads(raw)))
        except (ValueError, TypeError):
            continue  # a record we did not write
    yield from sorted(letters, key=lambda letter: letter.at)


@dataclass(frozen=True)
class FailedJob:
    """One job that will not run again by itself: a dead letter, or one RQ failed."""

    job_id: str
    error: str
    field: str
    reason: str
    at: float
    source: str


def _error_name(exc_string: str | None) -> str:
    """The exception type of RQ's stored traceback (its last line), nothing more: a
    library's message could quote input."""
    lines = [line for line in (exc_string or "").splitlines() if line.strip()]
    name = lines[-1].split(":", 1)[0].strip() if lines else "unknown"
    return name.rsplit(".", 1)[-1][:80] or "unknown"


def _registry(conn: redis.Redis, queue_name: str) -> FailedJobRegistry:
    return FailedJobRegistry(queue_name, connection=conn, serializer=JSONSerializer)


def _fetch(conn: redis.Redis, job_id: str) -> Job | None:
    """The job (``Job.fetch``), or None when it is gone or RQ cannot read it."""
    try:
        return Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
    except Exception:  # NoSuchJobError, or whatever RQ's restore raises on a bad field
        return None


def _rq_failed(conn: redis.Redis, job_id: str) -> FailedJob:
    """One job of RQ's failed registry, read through ``Job.fetch`` and its latest result."""
    job = _fetch(conn, job_id)
    if job is None:
        return FailedJob(job_id, "unknown", "job", "unreadable", 0.0, "rq")
    result = job.latest_result()
    error = _error_name(result.exc_string if result is not None else None)
    return FailedJob(job_id, error, "", "", job.ended_at.timestamp() if job.ended_at else 0.0, "rq")


def failed_jobs(conn: redis.Redis, queue_name: str) -> list[FailedJob]:
    """Dead letters and RQ's failed registry of ``queue_name``, oldest first."""
    out = [FailedJob(**asdict(letter), source="dead_letter") for letter in read(conn, queue_name)]
    seen = {job.job_id for job in out}
    ids = [i for i in _registry(conn, queue_name).get_job_ids(cleanup=False) if i not in seen]
    out += [_rq_failed(conn, job_id) for job_id in ids]
    return sorted(out, key=lambda job: job.at)


def requeue(conn: redis.Redis, queue_name: str, job_id: str) -> None:
    """Put one batch job RQ failed back on its queue (RQ's ``FailedJobRegistry.requeue``),
    or a poison turn, kept, in a batch job of its own; anything else (a job hash that could
    not be read) raises :class:`EnvelopeError` naming its field (it would only fail again:
    purge it)."""
    registry = _registry(conn, queue_name)
    if job_id in registry.get_job_ids(cleanup=False):
        registry.requeue(job_id)
        return
    kept: Any = conn.hget(kept_turns_key(queue_name), job_id)
    if kept is None:
        letter = next((x for x in read(conn, queue_name) if x.job_id == job_id), None)
        if letter is None:
            raise EnvelopeError("job", "no such failed job")
        raise EnvelopeError(letter.field, letter.reason)
    queue = Queue(queue_name, connection=conn, serializer=JSONSerializer)
    with conn.pipeline(transaction=True) as pipe:
        queue.enqueue_many([batch_job([json.loads(kept)], JOB_TIMEOUT_S)], pipeline=pipe)
        pipe.hdel(dead_letter_key(queue_name), job_id)
        pipe.hdel(kept_turns_key(queue_name), job_id)
        pipe.execute()


def purge(conn: redis.Redis, queue_name: str) -> int:
    """Forget every failed job of ``queue_name`` (records, RQ's registry entries and jobs);
    returns how many."""
    jobs = failed_jobs(conn, queue_name)
    registry = _registry(conn, queue_name)
    for job in jobs:
        if job.source != "rq":
            continue
        registry.remove(job.job_id)
        found = _fetch(conn, job.job_id)
        if found is not None:
            found.delete()
    conn.delete(dead_letter_key(queue_name), kept_turns_key(queue_name))
    return len(jobs)
