"""Dead letters: jobs the ingest worker refused (unreadable envelope) or isolated as poison.

Each gets one record in ``turngraph:dead:<queue>`` (error type, the field, a reason, when;
never chat text) and is counted in the queue's stats (``dead_lettered``); a job hash with a
readable id is marked ``failed`` so the same event can be published again. RQ's own failed
registry keeps the jobs RQ failed itself; ``turngraph jobs`` shows both.
"""

from __future__ import annotations

import json
import time
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from typing import Any, cast

import redis
from rq.serializers import JSONSerializer
from rq.utils import str_to_date

from turngraph.producers.rq_internals import (
    RQ_FAILED_PREFIX,
    RQ_JOB_PREFIX,
    RQ_QUEUE_PREFIX,
    rq_timestamp,
)
from turngraph.schemas.defaults import FAILURE_TTL_S, RETRIES
from turngraph.schemas.keys import CLAIMS_TEMPLATE, DEAD_LETTERS_TEMPLATE, QUEUE_STATS_TEMPLATE
from turngraph.workers.ingest.envelope import JOB_ID, read_job

_DEAD_LETTER = """
-- KEYS: dead letters, claims, stats. ARGV: job key prefix, ended_at, failure TTL, then
-- per job: id, record, exc_info, readable (1: the id may name a job hash of ours).
local n = 0
for i = 4, #ARGV, 4 do
  local id, record, exc, readable = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  redis.call('HSET', KEYS[1], id, record)
  redis.call('ZREM', KEYS[2], id)
  local key = ARGV[1] .. id
  if readable == '1' and redis.call('EXISTS', key) == 1 then
    redis.call('HSET', key, 'status', 'failed', 'ended_at', ARGV[2], 'exc_info', exc)
    redis.call('EXPIRE', key, tonumber(ARGV[3]))
  end
  n = n + 1
end
redis.call('HINCRBY', KEYS[3], 'dead_lettered', n)
return n
"""


@dataclass(frozen=True)
class DeadLetter:
    """Why one job will not run; ``field`` names the part that is wrong."""

    job_id: str
    error: str
    field: str
    reason: str
    at: float

    def exc_info(self) -> str:
        return f"{self.error}: {self.field}: {self.reason}"


def dead_letter_key(queue_name: str) -> str:
    return DEAD_LETTERS_TEMPLATE.format(queue=queue_name)


def record(
    conn: redis.Redis,
    queue_name: str,
    letters: Iterable[DeadLetter],
    *,
    failure_ttl_s: int = FAILURE_TTL_S,
) -> int:
    """Write the dead letters in one atomic step; returns how many."""
    args: list[str | int] = [RQ_JOB_PREFIX, rq_timestamp(time.time()), failure_ttl_s]
    for letter in letters:
        readable = "1" if JOB_ID.fullmatch(letter.job_id) else "0"
        args += [letter.job_id, json.dumps(asdict(letter)), letter.exc_info(), readable]
    if len(args) == 3:
        return 0
    keys = [
        dead_letter_key(queue_name),
        CLAIMS_TEMPLATE.format(queue=queue_name),
        QUEUE_STATS_TEMPLATE.format(queue=queue_name),
    ]
    return int(conn.eval(_DEAD_LETTER, len(keys), *keys, *args))


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


def _error_name(exc_info: bytes | None) -> str:
    """The exception type of RQ's stored traceback (its last line), nothing more: a
    library's message could quote input."""
    if not exc_info:
        return "unknown"
    try:
        text = zlib.decompress(exc_info).decode("utf-8", "replace")
    except zlib.error:
        text = exc_info.decode("utf-8", "replace")
    lines = [line for line in text.splitlines() if line.strip()]
    name = lines[-1].split(":", 1)[0].strip() if lines else "unknown"
    return name.rsplit(".", 1)[-1][:80] or "unknown"


def failed_jobs(conn: redis.Redis, queue_name: str) -> list[FailedJob]:
    """Dead letters and RQ's failed registry of ``queue_name``, oldest first."""
    out = [FailedJob(**asdict(letter), source="dead_letter") for letter in read(conn, queue_name)]
    seen = {job.job_id for job in out}
    members: list[bytes] = cast(Any, conn.zrange(RQ_FAILED_PREFIX + queue_name, 0, -1))
    ids = [i for i in (raw.decode("utf-8", "replace") for raw in members) if i not in seen]
    with conn.pipeline(transaction=False) as pipe:
        for job_id in ids:
            pipe.hmget(RQ_JOB_PREFIX + job_id, "exc_info", "ended_at")
        details = pipe.execute()
    for job_id, (exc_info, ended_at) in zip(ids, details, strict=True):
        at = str_to_date(ended_at).timestamp() if ended_at else 0.0
        out.append(FailedJob(job_id, _error_name(exc_info), "", "", at, "rq"))
    return sorted(out, key=lambda job: job.at)


def requeue(conn: redis.Redis, queue_name: str, job_id: str) -> None:
    """Put one failed job back on the queue; an unreadable one raises :class:`EnvelopeError`
    (it would only fail again: purge it)."""
    raw: Any = conn.hgetall(RQ_JOB_PREFIX + job_id) if JOB_ID.fullmatch(job_id) else None
    read_job(
        job_id,
        raw,
        connection=conn,
        serializer=JSONSerializer,
    )
    key = RQ_JOB_PREFIX + job_id
    with conn.pipeline(transaction=True) as pipe:
        pipe.hset(key, mapping={"status": "queued", "retries_left": RETRIES})
        pipe.hdel(key, "exc_info", "ended_at")
        pipe.persist(key)
        pipe.rpush(RQ_QUEUE_PREFIX + queue_name, job_id)
        pipe.hdel(dead_letter_key(queue_name), job_id)
        pipe.zrem(RQ_FAILED_PREFIX + queue_name, job_id)
        pipe.execute()


def purge(conn: redis.Redis, queue_name: str) -> int:
    """Forget every failed job of ``queue_name`` (records and job hashes); returns how many."""
    jobs = failed_jobs(conn, queue_name)
    with conn.pipeline(transaction=True) as pipe:
        for job in jobs:
            if JOB_ID.fullmatch(job.job_id):
                pipe.delete(RQ_JOB_PREFIX + job.job_id)
        pipe.delete(dead_letter_key(queue_name), RQ_FAILED_PREFIX + queue_name)
        pipe.execute()
    return len(jobs)
