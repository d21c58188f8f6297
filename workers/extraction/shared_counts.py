"""LLM counters mirrored into one Redis hash, so ``turngraph queue status`` shows the calls,
fallbacks and their reasons of every worker process (per-process metrics show only one)."""

from __future__ import annotations

import threading

import redis
import structlog

from turngraph.schemas.keys import LLM_STATS

__all__ = ["SharedCounts", "read_shared_counts"]

log = structlog.get_logger(__name__)


class SharedCounts:
    """``HINCRBY`` of :data:`~schemas.keys.LLM_STATS` fields ``<purpose>_<name>``; a Redis
    error loses the increment (logged once per process), never the caller's work."""

    def __init__(self, conn: redis.Redis, purpose: str) -> None:
        self._conn = conn
        self._purpose = purpose
        self._warned = False
        self._lock = threading.Lock()

    def __call__(self, counts: dict[str, int]) -> None:
        counts = {name: value for name, value in counts.items() if value}
        if not counts:
            return
        try:
            with self._conn.pipeline(transaction=False) as pipe:
                for name, value in counts.items():
                    pipe.hincrby(LLM_STATS, f"{self._purpose}_{name}", value)
                pipe.execute()
        except redis.RedisError as exc:
            with self._lock:
                warned, self._warned = self._warned, True
            if not warned:
                log.warning("llm_counts_not_shared", error=type(exc).__name__)


def read_shared_counts(conn: redis.Redis) -> dict[str, int]:
    """The hash as numbers (empty before the first LLM call)."""
    raw = conn.hgetall(LLM_STATS)
    return {(k.decode() if isinstance(k, bytes) else str(k)): int(v) for k, v in raw.items()}
