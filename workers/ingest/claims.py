"""Claims: the queued jobs a batching worker took, tagged with the worker, kept alive by a
heartbeat, and given back by any live worker once the heartbeat stops.

A claim is a member of ``turngraph:claims:<queue>`` (a sorted set scored by when the claim
expires) plus the holder's name in ``turngraph:claims:<queue>:owners``. The holder renews
its claims every :data:`HEARTBEAT_S` while it works; a worker that was SIGKILLed renews
nothing, so within :data:`CLAIM_TTL_S` its claims expire and the next live worker to look
(before each batch, and every maintenance interval while idle) puts them back at the head
of the queue. The job RQ dequeued for the batch is claimed too, and its entry in RQ's
started registry is removed when it is given back, so RQ's own abandoned-job detection
(minutes) does not run it a second time.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import redis
import structlog
from rq.queue import Queue

from producers.bounded_queue import rq_timestamp
from schemas.keys import CLAIM_OWNERS_TEMPLATE, CLAIMS_TEMPLATE, RQ_JOB_PREFIX

log = structlog.get_logger(__name__)

CLAIM_TTL_S = 15.0
"""A claim not renewed for this long is abandoned: its worker died."""

HEARTBEAT_S = 3.0
"""How often a working worker renews its claims."""

_CLAIM = """
local ids = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[2], ARGV[2], id)
  redis.call('HSET', KEYS[3], id, ARGV[5])
  -- never create a hash for an id that has none (a forged id): the reader refuses it
  if redis.call('EXISTS', ARGV[4] .. id) == 1 then
    redis.call('HSET', ARGV[4] .. id, 'status', 'started', 'started_at', ARGV[3])
  end
end
return ids
"""

_REQUEUE_EXPIRED = """
-- KEYS: queue list, claims, owners, RQ started registry. ARGV: now, job key prefix.
local ids = redis.call('ZRANGEBYSCORE', KEYS[2], '-inf', ARGV[1])
if #ids == 0 then return 0 end
local started = redis.call('ZRANGE', KEYS[4], 0, -1)
for i = #ids, 1, -1 do
  local id = ids[i]
  redis.call('LPUSH', KEYS[1], id)
  redis.call('HSET', ARGV[2] .. id, 'status', 'queued')
  redis.call('ZREM', KEYS[2], id)
  redis.call('HDEL', KEYS[3], id)
  for _, member in ipairs(started) do
    if member == id or string.sub(member, 1, #id + 1) == id .. ':' then
      redis.call('ZREM', KEYS[4], member)
    end
  end
end
return #ids
"""


def forget_started(conn: redis.Redis, queue: Queue, job_id: str) -> int:
    """Remove ``job_id`` from RQ's started registry (its members may carry an execution
    id after a colon), so RQ does not run it again as abandoned; returns how many."""
    key = queue.started_job_registry.key
    members: Any = conn.zrange(key, 0, -1)
    stale = [m for m in members if m.decode() == job_id or m.decode().startswith(job_id + ":")]
    return int(conn.zrem(key, *stale)) if stale else 0


def _rq_now() -> str:
    return rq_timestamp(time.time())


def claim_key(queue: Queue) -> str:
    return CLAIMS_TEMPLATE.format(queue=queue.name)


def owners_key(queue: Queue) -> str:
    return CLAIM_OWNERS_TEMPLATE.format(queue=queue.name)


def claim(conn: redis.Redis, queue: Queue, count: int, owner: str) -> list[str]:
    """Move up to ``count`` ids from the queue's head into ``owner``'s claims, atomically."""
    if count <= 0:
        return []
    script = conn.register_script(_CLAIM)
    ids = script(
        keys=[queue.key, claim_key(queue), owners_key(queue)],
        args=[count, time.time() + CLAIM_TTL_S, _rq_now(), RQ_JOB_PREFIX, owner],
    )
    return [i.decode("utf-8", "replace") if isinstance(i, bytes) else str(i) for i in ids]


def hold(conn: redis.Redis, queue: Queue, job_id: str, owner: str) -> None:
    """Claim a job RQ already dequeued for us (its recovery is then ours, in seconds)."""
    with conn.pipeline(transaction=True) as pipe:
        pipe.zadd(claim_key(queue), {job_id: time.time() + CLAIM_TTL_S})
        pipe.hset(owners_key(queue), job_id, owner)
        pipe.execute()


def renew(conn: redis.Redis, queue: Queue, ids: Sequence[str]) -> None:
    """Push the expiry of claims we still hold (``XX``: never re-create a released one)."""
    if ids:
        conn.zadd(claim_key(queue), dict.fromkeys(ids, time.time() + CLAIM_TTL_S), xx=True)


def release(pipe: redis.client.Pipeline, queue: Queue, ids: Sequence[str]) -> None:
    """Queue the removal of ``ids`` from the claims on ``pipe``."""
    if ids:
        pipe.zrem(claim_key(queue), *ids)
        pipe.hdel(owners_key(queue), *ids)


def requeue_expired_claims(conn: redis.Redis, queue: Queue, now: float | None = None) -> int:
    """Put claims whose worker died back at the head of the queue; returns how many."""
    script = conn.register_script(_REQUEUE_EXPIRED)
    count = script(
        keys=[queue.key, claim_key(queue), owners_key(queue), queue.started_job_registry.key],
        args=[now if now is not None else time.time(), RQ_JOB_PREFIX],
    )
    if count:
        log.warning("ingest_claims_requeued", queue=queue.name, jobs=int(count))
    return int(count)


@contextmanager
def heartbeat(conn: redis.Redis, queue: Queue, ids: Sequence[str]) -> Iterator[None]:
    """Renew ``ids`` every :data:`HEARTBEAT_S` until the block ends (a daemon thread)."""
    stop = threading.Event()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_S):
            try:
                renew(conn, queue, ids)
            except redis.RedisError as exc:  # the batch itself will notice; keep beating
                log.warning("ingest_claim_heartbeat_failed", error=type(exc).__name__)

    thread = threading.Thread(target=beat, name="claim-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(timeout=HEARTBEAT_S + 1)
