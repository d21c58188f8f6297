"""A query's embedding within the request's deadline, or none and the reason why.

A slow or unreachable embedder degrades the answer to lexical (``degraded`` names why)
instead of failing it: an in-process model is called inline, an endpoint on a worker
thread abandoned when the budget runs out. A query asked again takes its vector from a
small cache (the same text, the same vector). docs/recall.md ("The semantic signal",
Inside the deadline).
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass

import numpy as np

from turngraph.schemas.errors import TurngraphError
from turngraph.workers.embeddings.protocol import Embedder, Vectors

__all__ = [
    "QUERY_THREADS", "SEMANTIC_TIMEOUT", "SEMANTIC_UNAVAILABLE", "QueryCounters", "QueryEmbedder",
]  # fmt: skip

SEMANTIC_TIMEOUT = "semantic_timeout"
"""``degraded`` flag: the query was not embedded within its budget."""

SEMANTIC_UNAVAILABLE = "semantic_unavailable"
"""``degraded`` flag: the embedder failed (endpoint down, refused, rate-limited)."""

QUERY_THREADS = 2
"""Endpoint calls in flight at once; more queue (and time out) rather than pile up."""

QUERY_CACHE_SIZE = 2_048
"""Query vectors kept, least recently asked dropped first (2.5 KB each with the shipped
pair's 640 dimensions: 5 MB)."""


@dataclass
class QueryCounters:
    embedded: int = 0
    cached: int = 0
    """Queries answered from the cache (counted in ``embedded`` too)."""
    timed_out: int = 0
    failed: int = 0


class QueryEmbedder:
    """Embeds one query at a time for recall, inside a time budget."""

    def __init__(
        self, embedder: Embedder, *, inline: bool, cache_size: int = QUERY_CACHE_SIZE
    ) -> None:
        self.embedder = embedder
        self.counters = QueryCounters()
        self._pool = None if inline else ThreadPoolExecutor(QUERY_THREADS, "query-embed")
        self._lock = threading.Lock()
        self._cache: OrderedDict[str, Vectors] = OrderedDict()
        self._cache_size = cache_size

    def embed(self, text: str, budget_s: float) -> tuple[Vectors | None, str | None]:
        """``(vector, None)``, or ``(None, reason)`` with a ``degraded`` flag as reason.
        The vector is read-only (it may be the cache's)."""
        with self._lock:
            vector = self._cache.get(text)
            if vector is not None:
                self._cache.move_to_end(text)
                self.counters.cached += 1
                self.counters.embedded += 1
                return vector, None
        if budget_s <= 0:
            return self._count(None, SEMANTIC_TIMEOUT)
        try:
            if self._pool is None:
                rows = self.embedder.embed([text])
            else:
                future: Future[Vectors] = self._pool.submit(self.embedder.embed, [text])
                rows = future.result(timeout=budget_s)
        except FutureTimeout:
            return self._count(None, SEMANTIC_TIMEOUT)
        except (TurngraphError, ValueError, OSError):
            return self._count(None, SEMANTIC_UNAVAILABLE)
        if rows.shape[0] != 1 or not np.isfinite(rows).all():
            return self._count(None, SEMANTIC_UNAVAILABLE)
        vector = rows[0].copy()  # not a view that keeps a larger array alive
        vector.flags.writeable = False
        if self._cache_size > 0:
            with self._lock:
                self._cache[text] = vector
                if len(self._cache) > self._cache_size:
                    self._cache.popitem(last=False)
        return self._count(vector, None)

    def _count(
        self, vector: Vectors | None, reason: str | None
    ) -> tuple[Vectors | None, str | None]:
        with self._lock:
            if reason == SEMANTIC_TIMEOUT:
                self.counters.timed_out += 1
            elif reason is not None:
                self.counters.failed += 1
            else:
                self.counters.embedded += 1
        return vector, reason

    def clear_cache(self) -> None:
        """Forget every cached query vector (benches measure a new query's cost)."""
        with self._lock:
            self._cache.clear()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
