"""Admission's first step in Redis, and the lock's release in its last.

One script call (:data:`TAKE`) takes a source's admission lock, checks RQ's queue has room,
moves up to one batch into each of up to ``lists`` admission lists (a draining admission
takes several batches at once) and reads the forget epoch; the lists' ``LRANGE`` rides in
the same round trip. The lock is let go in the
script when there is nothing to admit, and otherwise in the ``MULTI`` that writes the batch
job (:data:`RELEASE`). The lock is the one ``workers/tombstones.py``'s
``admission_lock`` names (redis-py's ``Lock`` takes it the same way: ``SET NX PX`` with a
token), so a forget's ``hold_admission`` and an admitter still exclude each other.
"""

from __future__ import annotations

import uuid
from enum import IntEnum
from typing import Any, NamedTuple

import redis

from turngraph.schemas.keys import ADMISSION_LISTS, FORGET_EPOCH, admission_lists

__all__ = [
    "NOTHING", "RELEASE", "TAKE", "Request", "Take", "Taken", "complete", "lock_key", "parse",
    "queue_take", "request", "take",
]  # fmt: skip

TAKE = """
-- KEYS[1] inbox  KEYS[2] forget epoch  KEYS[3] admission lock  KEYS[4] RQ's queue
-- KEYS[5..] the admission lists (schemas/keys.py admission_lists), every one of them
-- ARGV[1] entries per batch  ARGV[2] lock token  ARGV[3] lock TTL (ms)
-- ARGV[4] move only while RQ's queue holds fewer jobs than this (0: always)
-- ARGV[5] batches to move at most (one per admission list)
-- Returns {0} when another holds the lock, {1} when there is nothing to admit (the lock
-- let go again), {2, forget epoch, lists} when the first `lists` admission lists may hold
-- entries and the lock is ours. Unless an admission list holds entries (a dead
-- admitter's: those are returned, nothing moves), batches of up to ARGV[1] move there
-- from the inbox's head: the rest of the inbox by RENAME once it holds no more than a
-- batch, else by SORT ... BY nosort LIMIT ... STORE (list order kept), then one LTRIM;
-- nothing passes through Lua.
if not redis.call('SET', KEYS[3], ARGV[2], 'NX', 'PX', ARGV[3]) then
  return {0}
end
local LISTS = 5
local held = 0
if redis.call('EXISTS', unpack(KEYS, LISTS)) > 0 then
  for i = LISTS, #KEYS do
    if redis.call('EXISTS', KEYS[i]) == 1 then held = i - LISTS + 1 end
  end
end
if held == 0 then
  local n = tonumber(ARGV[1])
  local batches = math.min(tonumber(ARGV[5]), #KEYS - LISTS + 1)
  local bound = tonumber(ARGV[4])
  if bound > 0 and redis.call('LLEN', KEYS[4]) >= bound then
    batches = 0
  end
  local length = batches > 0 and redis.call('LLEN', KEYS[1]) or 0
  local moved = 0
  while held < batches and moved < length do
    local list = KEYS[LISTS + held]
    held = held + 1
    if length - moved <= n then
      if moved > 0 then redis.call('LTRIM', KEYS[1], moved, -1) end
      redis.call('RENAME', KEYS[1], list)
      moved = length
      length = 0
    else
      redis.call('SORT', KEYS[1], 'BY', 'nosort', 'LIMIT', moved, n, 'STORE', list)
      moved = moved + n
    end
  end
  if moved > 0 and length > 0 then
    redis.call('LTRIM', KEYS[1], moved, -1)
  end
  if held == 0 then
    redis.call('DEL', KEYS[3])
    return {1}
  end
end
return {2, redis.call('GET', KEYS[2]), held}
"""
"""Moves batches from an inbox to its admission lists under the source's lock: a
constant number of commands per batch, and no entry copied into Lua and back (``LRANGE``
+ ``RPUSH`` through Lua cost Redis about twice as much; ``LPOP`` + ``RPUSH`` five times,
``LMOVE`` per entry ten times)."""

RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""
"""Lets go of the lock if it is still ours (it lapses after its TTL): by ``EVALSHA`` inside
the batch's ``MULTI``, loaded with :data:`TAKE`."""


class Taken(IntEnum):
    """What :data:`TAKE` found."""

    HELD = 0
    """Another admitter (or a forget) holds the source's lock."""
    NOTHING = 1
    """Nothing to admit; the lock is not held."""
    ENTRIES = 2
    """The admission list holds entries; the lock is held."""


class Request(NamedTuple):
    """One :data:`TAKE` call's keys and arguments (a fresh lock token each)."""

    keys: list[str]
    args: list[Any]

    @property
    def held(self) -> tuple[str, str]:
        """The lock and its token: :data:`RELEASE`'s key and argument."""
        return self.keys[2], self.args[1]

    @property
    def lists(self) -> list[str]:
        """Every admission list of the source, the first ``batches`` filled first."""
        return self.keys[_LISTS:]

    @property
    def batches(self) -> int:
        """The batches the take moves at most (the admission lists read with it)."""
        return int(self.args[4])


_LISTS = 4
"""Where the admission lists begin among :data:`TAKE`'s keys."""


class Take(NamedTuple):
    taken: Taken
    batches: list[list[bytes]]
    """Each admission list's entries, in order (those read so far: :func:`complete`)."""
    epoch: bytes | None
    lists: int = 0
    """How many admission lists may hold entries."""


NOTHING = Take(Taken.NOTHING, [], None)


def lock_key(pending: str) -> str:
    """The admission lock of admission list ``pending`` (``tombstones.admission_lock``'s)."""
    return pending + ":lock"


def request(
    inbox: str,
    pending: str,
    queue_key: str,
    batch: int,
    bound: int,
    lock_ttl_ms: int,
    batches: int = 1,
) -> Request:
    """A take of up to ``batches`` batches of ``batch`` entries from ``inbox`` into the
    admission lists of ``pending`` while RQ's queue (``queue_key``) holds fewer than
    ``bound`` jobs (0: always)."""
    if not 1 <= batches <= ADMISSION_LISTS:
        raise ValueError(f"batches must be 1 to {ADMISSION_LISTS}")
    keys = [inbox, FORGET_EPOCH, lock_key(pending), queue_key, *admission_lists(pending)]
    return Request(keys, [batch, uuid.uuid4().hex, lock_ttl_ms, bound, batches])


def take(conn: redis.Redis, sha: str, req: Request, *, read: bool) -> Take:
    """One :data:`TAKE` call (``sha``: its SHA; both scripts loaded on ``NOSCRIPT``); with
    ``read``, the admission lists' ``LRANGE`` in the same round trip (read for nothing
    when another holds the lock), else a second round trip only when the entries are
    ours."""
    try:
        return _take(conn, sha, req, read=read)
    except redis.exceptions.NoScriptError:  # a restarted Redis lost its script cache
        conn.script_load(TAKE)
        conn.script_load(RELEASE)
        return _take(conn, sha, req, read=read)


def _take(conn: redis.Redis, sha: str, req: Request, *, read: bool) -> Take:
    with conn.pipeline(transaction=False) as pipe:
        queue_take(pipe, sha, req, read=read)
        reply, *entries = pipe.execute()
    return complete(conn, req, parse(reply, entries))


def queue_take(pipe: Any, sha: str, req: Request, *, read: bool = True) -> int:
    """Queue the take (and the ``LRANGE`` of the admission lists it fills) on ``pipe``
    (a ``MULTI``'s too: the next batches taken in the round trip that commits the last);
    returns the replies queued after the take's."""
    pipe.evalsha(sha, len(req.keys), *req.keys, *req.args)
    if not read:
        return 0
    for key in req.lists[: req.batches]:
        pipe.lrange(key, 0, -1)
    return req.batches


def parse(reply: Any, entries: Any) -> Take:
    """The take's reply and the admission lists' entries read with it as a :class:`Take`."""
    taken = Taken(int(reply[0]))
    if taken is not Taken.ENTRIES:
        return Take(taken, [], None)
    lists = int(reply[2])
    return Take(taken, [list(found) for found in entries[:lists]], reply[1], lists)


def complete(conn: redis.Redis, req: Request, found: Take) -> Take:
    """``found`` with every admission list it holds read: a second round trip only when
    the take was not read with it, or found a dead admitter's lists beyond those read."""
    missing = req.lists[len(found.batches) : found.lists]
    if found.taken is not Taken.ENTRIES or not missing:
        return found
    with conn.pipeline(transaction=False) as pipe:
        for key in missing:
            pipe.lrange(key, 0, -1)
        read = pipe.execute()
    return found._replace(batches=[*found.batches, *(list(entries) for entries in read)])
