"""Admission's first step in Redis, and the lock's release in its last.

One script call (:data:`TAKE`) takes a source's admission lock, checks RQ's queue has room,
moves up to one batch from the inbox into the admission list and reads the forget epoch;
the admission list's ``LRANGE`` rides in the same round trip. The lock is let go in the
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

from turngraph.schemas.keys import FORGET_EPOCH

__all__ = [
    "NOTHING", "RELEASE", "TAKE", "Request", "Take", "Taken", "lock_key", "parse", "queue_take",
    "request", "take",
]  # fmt: skip

TAKE = """
-- KEYS[1] inbox  KEYS[2] admission list  KEYS[3] forget epoch  KEYS[4] admission lock
-- KEYS[5] RQ's queue
-- ARGV[1] entries to move  ARGV[2] lock token  ARGV[3] lock TTL (ms)
-- ARGV[4] move only while RQ's queue holds fewer jobs than this (0: always)
-- Returns {0} when another holds the lock, {1} when there is nothing to admit (the lock
-- let go again), {2, forget epoch} when the admission list holds entries and the lock is
-- ours. Unless the admission list holds entries (a dead admitter's), up to ARGV[1] move
-- there from the inbox's head: the whole inbox by RENAME when it holds no more, else by
-- SORT ... BY nosort LIMIT ... STORE (list order kept) and LTRIM; nothing passes through
-- Lua.
if not redis.call('SET', KEYS[4], ARGV[2], 'NX', 'PX', ARGV[3]) then
  return {0}
end
local n = tonumber(ARGV[1])
local bound = tonumber(ARGV[4])
if bound > 0 and redis.call('LLEN', KEYS[5]) >= bound then
  n = 0
end
if redis.call('EXISTS', KEYS[2]) == 0 then
  local length = n > 0 and redis.call('LLEN', KEYS[1]) or 0
  if length > 0 and length <= n then
    redis.call('RENAME', KEYS[1], KEYS[2])
  elseif length > n then
    redis.call('SORT', KEYS[1], 'BY', 'nosort', 'LIMIT', 0, n, 'STORE', KEYS[2])
    redis.call('LTRIM', KEYS[1], n, -1)
  else
    redis.call('DEL', KEYS[4])
    return {1}
  end
end
return {2, redis.call('GET', KEYS[3])}
"""
"""Moves one batch from an inbox to its admission list under the source's lock: a
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
        return self.keys[3], self.args[1]


class Take(NamedTuple):
    taken: Taken
    entries: list[bytes]
    epoch: bytes | None


NOTHING = Take(Taken.NOTHING, [], None)


def lock_key(pending: str) -> str:
    """The admission lock of admission list ``pending`` (``tombstones.admission_lock``'s)."""
    return pending + ":lock"


def request(
    inbox: str, pending: str, queue_key: str, batch: int, bound: int, lock_ttl_ms: int
) -> Request:
    """A take of up to ``batch`` entries from ``inbox`` into ``pending`` while RQ's queue
    (``queue_key``) holds fewer than ``bound`` jobs (0: always)."""
    keys = [inbox, pending, FORGET_EPOCH, lock_key(pending), queue_key]
    return Request(keys, [batch, uuid.uuid4().hex, lock_ttl_ms, bound])


def take(conn: redis.Redis, sha: str, req: Request, *, read: bool) -> Take:
    """One :data:`TAKE` call (``sha``: its SHA; both scripts loaded on ``NOSCRIPT``); with
    ``read``, the admission list's ``LRANGE`` in the same round trip (read for nothing
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
        replies = pipe.execute()
    found = parse(*replies) if read else parse(replies[0], [])
    if found.taken is Taken.ENTRIES and not read:
        return found._replace(entries=list(conn.lrange(req.keys[1], 0, -1)))  # type: ignore[arg-type]
    return found


def queue_take(pipe: Any, sha: str, req: Request, *, read: bool = True) -> None:
    """Queue the take (and the admission list's ``LRANGE``) on ``pipe`` (a ``MULTI``'s
    too: the next batch taken in the round trip that commits the last)."""
    pipe.evalsha(sha, len(req.keys), *req.keys, *req.args)
    if read:
        pipe.lrange(req.keys[1], 0, -1)


def parse(reply: Any, entries: Any) -> Take:
    """The take's reply and the admission list's entries as a :class:`Take`."""
    taken = Taken(int(reply[0]))
    if taken is not Taken.ENTRIES:
        return Take(taken, [], None)
    return Take(taken, list(entries), reply[1] if len(reply) > 1 else None)
