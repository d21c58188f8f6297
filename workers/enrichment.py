"""The enrichment backlog: stored turns waiting for the LLM (issue 36, ``docs/llm.md``).

A Redis sorted set of the event ids ingest stored with the offline rules' entities,
scored by when; the enrichment pass (``workers/maintenance/reextract.py``) serves it in
one order. It is bounded (``max_turns``): when full, what would be served last is
dropped and counted (``dropped`` in :data:`~schemas.keys.REEXTRACT_STATS`).
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from enum import Enum
from typing import Any, cast

import redis
import structlog

from turngraph.schemas.defaults import REEXTRACT_PENDING_MAX
from turngraph.schemas.keys import REEXTRACT_PENDING, REEXTRACT_STATS

__all__ = ["BacklogStatus", "EnrichOrder", "EnrichmentBacklog", "read_status"]

log = structlog.get_logger(__name__)


class EnrichOrder(str, Enum):
    """Which turns the enrichment pass takes first."""

    OLDEST = "oldest"
    NEWEST = "newest"


@dataclass(frozen=True)
class BacklogStatus:
    backlog: int
    """Turns waiting for the LLM."""
    lag_s: float
    """How long the longest-waiting of them has waited (0: none waits)."""
    dropped: int
    """Turns whose enrichment was dropped (the backlog was full); they stay stored."""
    enriched: int
    """Turns the LLM's answer was merged into."""

    def as_dict(self) -> dict[str, int]:
        return {
            "llm_enrich_backlog": self.backlog,
            "llm_enrich_lag_s": round(self.lag_s),
            "llm_enrich_dropped": self.dropped,
            "llm_enrich_done": self.enriched,
        }


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


@dataclass(frozen=True)
class EnrichmentBacklog:
    """The backlog's bound and order; the state lives in Redis (shared by every worker)."""

    max_turns: int = REEXTRACT_PENDING_MAX
    order: EnrichOrder = EnrichOrder.NEWEST

    def add(self, pipe: redis.client.Pipeline, event_ids: Iterable[str], now: float) -> int:
        """Queue the ids and the trim on ``pipe``; returns the index of the trim's reply
        in the pipeline (the number dropped), for :meth:`count_dropped`."""
        pipe.zadd(REEXTRACT_PENDING, dict.fromkeys(event_ids, now))
        if self.order is EnrichOrder.OLDEST:  # served last: the newest
            pipe.zremrangebyrank(REEXTRACT_PENDING, self.max_turns, -1)
        else:  # served last: the oldest
            pipe.zremrangebyrank(REEXTRACT_PENDING, 0, -self.max_turns - 1)
        return len(pipe) - 1

    @staticmethod
    def count_dropped(conn: redis.Redis, dropped: int) -> None:
        """Count (and log) enrichment dropped by a trim; a Redis error loses the count."""
        if not dropped:
            return
        try:
            conn.hincrby(REEXTRACT_STATS, "dropped", dropped)
        except redis.RedisError as exc:
            log.warning("enrich_drop_not_counted", error=type(exc).__name__)
        log.warning("enrich_backlog_full", dropped=dropped, order_kept="stored, not enriched")

    def take(self, conn: redis.Redis, count: int, skip: int = 0) -> list[str]:
        """The next ``count`` ids in serving order (after the first ``skip``)."""
        raw = conn.zrange(
            REEXTRACT_PENDING, skip, skip + count - 1, desc=self.order is EnrichOrder.NEWEST
        )
        return [_text(r) for r in cast(list[Any], raw)]

    def behind_score(self, conn: redis.Redis) -> float:
        """The score that puts a turn behind every other in serving order (a turn whose
        batch failed does not block the rest)."""
        if self.order is EnrichOrder.OLDEST:
            return time.time()
        first = cast(list[Any], conn.zrange(REEXTRACT_PENDING, 0, 0, withscores=True))
        return float(first[0][1]) - 0.001 if first else time.time()


def read_status(conn: redis.Redis, now: float | None = None) -> BacklogStatus:
    """The backlog's size, lag and counters (one round trip)."""
    with conn.pipeline(transaction=False) as pipe:
        pipe.zcard(REEXTRACT_PENDING)
        pipe.zrange(REEXTRACT_PENDING, 0, 0, withscores=True)
        pipe.hmget(REEXTRACT_STATS, ["dropped", "succeeded"])
        size, oldest, (dropped, done) = pipe.execute()
    now = time.time() if now is None else now
    lag = max(0.0, now - float(oldest[0][1])) if oldest else 0.0
    return BacklogStatus(int(size), lag, int(dropped or 0), int(done or 0))
