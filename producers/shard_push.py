"""A sharded recall client's push: the claim check and the push in one round trip.

``shard_push.lua`` pushes the request only when a replica's claim on its shard is live,
so a client does not wait for its deadline on an unserved shard. It runs as a Redis
Function (``FCALL turngraph_shard_push``), loaded by the sharded replicas and
``turngraph credentials issue``; a call that finds no function answers "no replica".
docs/scaling.md ("Recall shards").
"""

from __future__ import annotations

import time
from importlib.resources import files

import redis

from turngraph.schemas.shards import shard_alive_key

__all__ = ["LIBRARY_NAME", "PUSH_FUNCTION", "library_source", "load_shard_push", "push_if_served"]

PUSH_FUNCTION = "turngraph_shard_push"
"""The Redis Function a sharded client calls (``FCALL``)."""

LIBRARY_NAME = "turngraph_shards"
"""The function library holding it."""


def library_source() -> str:
    """``shard_push.lua`` as a Redis Function library (its body sees KEYS and ARGV)."""
    body = files("turngraph.producers").joinpath("shard_push.lua").read_text(encoding="utf-8")
    return (
        f"#!lua name={LIBRARY_NAME}\n"
        f"redis.register_function('{PUSH_FUNCTION}', function(KEYS, ARGV)\n{body}\nend)\n"
    )


def load_shard_push(conn: redis.Redis, *, replace: bool = True) -> None:
    """Load the library (``replace``: even when one is there, so that it is this
    release's); needs the operator's credential."""
    if replace or not conn.function_list(library=LIBRARY_NAME):
        conn.execute_command("FUNCTION", "LOAD", "REPLACE", library_source())


def push_if_served(
    conn: redis.Redis, shard: int, requests_key: str, payload: str, ttl_s: int
) -> bool:
    """Push ``payload`` on ``requests_key`` (expiring after ``ttl_s``) if a replica's
    claim on ``shard`` is live; False, with nothing pushed, when none is."""
    now_ms = int(time.time() * 1000)
    try:
        pushed = conn.fcall(
            PUSH_FUNCTION, 1, requests_key, shard_alive_key(shard), now_ms, payload, ttl_s
        )
    except redis.ResponseError as exc:
        if "function not found" in str(exc).lower():
            return False  # no replica has started since Redis lost its functions
        raise
    return bool(pushed)
