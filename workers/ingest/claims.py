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

Two more ways a job can be left behind, both swept here within seconds: a worker that
lost Redis gives back only the claims it still owns (:func:`give_back_owned`: another
worker may have requeued them meanwhile, or Redis came back without them), and a job
"in limbo" -- in RQ's intermediate list or started registry but held by no claim (a
worker killed between RQ's dequeue and its claim, or a Redis that came back from its
append-only file in between) -- is put back at the queue's head once seen there for
:data:`CLAIM_TTL_S` (:func:`sweep_limbo`). Started-registry and intermediate entries of
jobs that are no longer running (finished, failed, queued again, gone) are removed at
once: RQ would otherwise retry or fail them minutes later.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import redis
import structlog
from rq.queue import Queue

from turngraph.producers.rq_internals import RQ_JOB_PREFIX, rq_timestamp
from turngraph.schemas.keys import CLAIM_OWNERS_TEMPLATE, CLAIMS_TEMPLATE, LIMBO_TEMPLATE

log = structlog.get_logger(__name__)

CLAIM_TTL_S = 15.0
"""A claim not renewed for this long is abandoned: its worker died."""

HEARTBEAT_S = 3.0
"""How often a working worker renews its claims."""

_CLAIM = """
local RQ_STATUSES = {created = true, queued = true, started = true, deferred = true,
  scheduled = true, finished = true, failed = true, stopped = true, canceled = true}
local ids = redis.call('LPOP', KEYS[1], tonumber(ARGV[1]))
if not ids then return {} end
for _, id in ipairs(ids) do
  redis.call('ZADD', KEYS[2], ARGV[2], id)
  redis.call('HSET', KEYS[3], id, ARGV[5])
  -- never create a hash for an id that has none (a forged id), nor overwrite a status
  -- that is not RQ's (a forged one): the reader refuses both, as on the dequeued path
  local status = redis.call('HGET', ARGV[4] .. id, 'status')
  if status and RQ_STATUSES[status] then
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
  if redis.call('EXISTS', ARGV[2] .. id) == 1 then
    redis.call('HSET', ARGV[2] .. id, 'status', 'queued')
  end
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


_GIVE_BACK_OWNED = """
-- KEYS: queue list, claims, owners, RQ started registry, RQ intermediate list.
-- ARGV: owner, job key prefix, then the ids (the batch's order: given back first-first).
local started = redis.call('ZRANGE', KEYS[4], 0, -1)
local n = 0
for i = #ARGV, 3, -1 do
  local id = ARGV[i]
  if redis.call('HGET', KEYS[3], id) == ARGV[1] then
    redis.call('LPUSH', KEYS[1], id)
    if redis.call('EXISTS', ARGV[2] .. id) == 1 then
      redis.call('HSET', ARGV[2] .. id, 'status', 'queued')
    end
    redis.call('ZREM', KEYS[2], id)
    redis.call('HDEL', KEYS[3], id)
    redis.call('LREM', KEYS[5], 0, id)
    for _, member in ipairs(started) do
      if member == id or string.sub(member, 1, #id + 1) == id .. ':' then
        redis.call('ZREM', KEYS[4], member)
      end
    end
    n = n + 1
  end
end
return n
"""

_SWEEP_LIMBO = """
-- KEYS: queue list, claims, RQ started registry, RQ intermediate list, suspects hash.
-- ARGV: now, limbo limit (s), job key prefix.
-- Returns {stale entries removed, jobs requeued, then the intermediate ids without a job
-- hash (RQ dequeued them and skipped them silently: the caller dead-letters them)}.
local now, limit, prefix = tonumber(ARGV[1]), tonumber(ARGV[2]), ARGV[3]
local removed, requeued = 0, 0
local in_limbo, no_hash = {}, {}
local function status_of(id)
  return redis.call('HGET', prefix .. id, 'status')
end
-- started registry members are "<job id>:<execution id>"
for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
  local id = string.match(member, '^([^:]+):') or member
  local status = status_of(id)
  if status ~= 'started' then
    redis.call('ZREM', KEYS[3], member)
    removed = removed + 1
  elseif not redis.call('ZSCORE', KEYS[2], id) then
    in_limbo[id] = true
  end
end
for _, id in ipairs(redis.call('LRANGE', KEYS[4], 0, -1)) do
  local status = status_of(id)
  if status ~= 'queued' and status ~= 'started' then
    redis.call('LREM', KEYS[4], 0, id)
    removed = removed + 1
    if not status and redis.call('EXISTS', prefix .. id) == 0 then
      no_hash[#no_hash + 1] = id
    end
  elseif not redis.call('ZSCORE', KEYS[2], id) then
    in_limbo[id] = true
  end
end
-- first seen now, or requeued when seen for longer than the limit
for _, id in ipairs(redis.call('HKEYS', KEYS[5])) do
  if not in_limbo[id] then redis.call('HDEL', KEYS[5], id) end
end
for id, _ in pairs(in_limbo) do
  local seen = tonumber(redis.call('HGET', KEYS[5], id))
  if not seen then
    redis.call('HSET', KEYS[5], id, now)
  elseif now - seen >= limit then
    redis.call('LPUSH', KEYS[1], id)
    if redis.call('EXISTS', prefix .. id) == 1 then
      redis.call('HSET', prefix .. id, 'status', 'queued')
    end
    redis.call('LREM', KEYS[4], 0, id)
    for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
      if member == id or string.sub(member, 1, #id + 1) == id .. ':' then
        redis.call('ZREM', KEYS[3], member)
      end
    end
    redis.call('HDEL', KEYS[5], id)
    requeued = requeued + 1
  end
end
return {removed, requeued, unpack(no_hash)}
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


def limbo_key(queue: Queue) -> str:
    return LIMBO_TEMPLATE.format(queue=queue.name)


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


def give_back_owned(conn: redis.Redis, queue: Queue, ids: Sequence[str], owner: str) -> int:
    """Put back at the queue's head those of ``ids`` that ``owner`` still holds (after it
    lost Redis mid-batch), clearing their RQ started and intermediate entries; the others
    were requeued by another worker or were never claimed in the Redis that came back."""
    if not ids:
        return 0
    script = conn.register_script(_GIVE_BACK_OWNED)
    keys = [
        queue.key,
        claim_key(queue),
        owners_key(queue),
        queue.started_job_registry.key,
        queue.intermediate_queue_key,
    ]
    return int(script(keys=keys, args=[owner, RQ_JOB_PREFIX, *ids]))


@dataclass(frozen=True)
class Swept:
    stale: int
    """RQ started / intermediate entries of jobs no longer running, removed."""
    requeued: int
    """Jobs held by nobody for :data:`CLAIM_TTL_S`, put back at the queue's head."""
    without_hash: list[str]
    """Ids RQ dequeued and skipped because no job hash exists (to be dead-lettered)."""


def sweep_limbo(conn: redis.Redis, queue: Queue, now: float | None = None) -> Swept:
    """Remove RQ started / intermediate entries of jobs no longer running, and requeue jobs
    held by nobody for :data:`CLAIM_TTL_S`."""
    script = conn.register_script(_SWEEP_LIMBO)
    keys = [
        queue.key,
        claim_key(queue),
        queue.started_job_registry.key,
        queue.intermediate_queue_key,
        limbo_key(queue),
    ]
    removed, requeued, *no_hash = script(
        keys=keys, args=[now if now is not None else time.time(), CLAIM_TTL_S, RQ_JOB_PREFIX]
    )
    if removed or requeued:
        log.warning(
            "ingest_registry_swept", queue=queue.name, stale=int(removed), requeued=int(requeued)
        )
    ids = [i.decode("utf-8", "replace") if isinstance(i, bytes) else str(i) for i in no_hash]
    return Swept(int(removed), int(requeued), ids)


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
