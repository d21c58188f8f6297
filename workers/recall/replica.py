"""A recall replica's health, seen from outside: its heartbeat key and its change-stream lag.

Each replica writes ``turngraph:recall:replica:<name>`` every ``HEARTBEAT_EVERY_S``
(:class:`~turngraph.schemas.replicas.ReplicaHeartbeat`: whether the graph bootstrap is
done, the last change-stream entry applied, the lag, the index size) with a short expiry,
so a dead replica's key vanishes on its own.
``turngraph doctor`` and the metrics read them; the replica itself uses the lag to flag
its answers ``change_stream_lag``.
"""

from __future__ import annotations

import time
from typing import Any

import redis

from turngraph.schemas.keys import RECALL_REPLICA_PREFIX
from turngraph.schemas.replicas import ReplicaHeartbeat, read_heartbeat

__all__ = [
    "CHANGE_STREAM_LAG", "GRAPH_UNAVAILABLE", "HEARTBEAT_EVERY_S", "HEARTBEAT_TTL_S",
    "entry_time_s", "heartbeat_key", "process_is_ready", "publish_heartbeat", "read_heartbeats",
    "replica_name", "stream_lag_s",
]  # fmt: skip

HEARTBEAT_EVERY_S = 1.0
"""How often a replica refreshes its heartbeat and measures its lag."""

HEARTBEAT_TTL_S = 10
"""A heartbeat key not refreshed for this long expires: the replica is gone."""

GRAPH_UNAVAILABLE = "graph_unavailable"
"""``degraded`` flag: the graph bootstrap is not done (the graph is down or still being
read; answers come from what the change stream brought since the replica started), or
the graph stopped answering (nothing new is stored; answers come from the index)."""

CHANGE_STREAM_LAG = "change_stream_lag"
"""``degraded`` flag: the replica is further behind the change stream than its threshold."""


def heartbeat_key(replica: str) -> str:
    return RECALL_REPLICA_PREFIX + replica


def replica_name(host: str, pid: int, suffix: str) -> str:
    """A replica's name: its host and process first, so its starter can find it."""
    return f"{host}-{pid}-{suffix}"


def process_is_ready(conn: redis.Redis, host: str, pid: int, *, applied: str = "0-0") -> bool:
    """True once the recall replica in process ``pid`` on ``host`` serves with the graph's
    memories loaded (its heartbeat, written while it pops requests and removed when it
    stops, says ``bootstrapped``) and has applied the change stream up to ``applied``."""
    pattern = heartbeat_key(replica_name(host, pid, "*"))
    for key in conn.scan_iter(match=pattern, count=1_000):
        value: Any = conn.get(key)
        beat = read_heartbeat(value)
        if beat is not None and beat.bootstrapped and beat.position_id >= _stream_id(applied):
            return True
    return False


def _stream_id(entry_id: str) -> tuple[int, int]:
    millis, _, sequence = entry_id.partition("-")
    return int(millis), int(sequence or 0)


def publish_heartbeat(conn: redis.Redis, beat: ReplicaHeartbeat) -> None:
    conn.set(heartbeat_key(beat.replica), beat.to_json(), ex=HEARTBEAT_TTL_S)


def read_heartbeats(conn: redis.Redis) -> list[ReplicaHeartbeat]:
    """Every live replica's heartbeat (values that are not one are skipped)."""
    keys = sorted(conn.scan_iter(match=RECALL_REPLICA_PREFIX + "*", count=100))
    values: list[Any] = list(conn.mget(keys)) if keys else []
    return [beat for beat in map(read_heartbeat, values) if beat is not None]


def entry_time_s(entry_id: str) -> float:
    """When a stream entry was added (its id's milliseconds part)."""
    return int(entry_id.partition("-")[0]) / 1000


def stream_lag_s(conn: redis.Redis, stream: str, position: str, now: float | None = None) -> float:
    """How old the first entry after ``position`` is (0 when none is left to apply)."""
    following: Any = conn.xrange(stream, min="(" + position, max="+", count=1)
    if not following:
        return 0.0
    first_id = following[0][0]
    first_id = first_id.decode() if isinstance(first_id, bytes) else str(first_id)
    return max(0.0, (time.time() if now is None else now) - entry_time_s(first_id))
