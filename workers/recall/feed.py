"""What keeps a recall replica's index filled: the graph read once, the change stream tailed.

The graph is read in the background (retried with back-off while it is down) and handed
to the tail thread, the index's one writer, which replays the stream from the position
noted before the read (later changes win again). Until then the tail already applies
what the stream brings.
"""

from __future__ import annotations

import gc
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import redis
import structlog

from turngraph.schemas.changes import decode_change
from turngraph.schemas.errors import InvalidPayloadError
from turngraph.schemas.shards import ShardSet
from turngraph.workers.recall.bootstrap import (
    MemorySource,
    VectorSource,
    all_memories,
    stored_vectors,
)
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.sharding import held_upsert, holds_memory, workspace_filter
from turngraph.workers.recall.vectors import Vector, release_freed_memory

__all__ = [
    "BOOTSTRAP_BACKOFF_S", "REDIS_ERROR_PAUSE_S", "TAIL_BATCH", "TAIL_BLOCK_MS", "FeedCounters",
    "IndexFeed", "keep_long_lived",
]  # fmt: skip

log = structlog.get_logger(__name__)

TAIL_BLOCK_MS = 1_000
"""How long one XREAD on the change stream blocks."""

TAIL_BATCH = 1_000
"""Change entries applied per XREAD."""

BOOTSTRAP_BACKOFF_S = (0.5, 1.0, 2.0, 5.0)
"""Waits between attempts to read the graph while it is down (then the last, repeated)."""

REDIS_ERROR_PAUSE_S = 0.5
"""The tail's pause after a Redis error."""


def keep_long_lived() -> None:
    """After a bootstrap: collect the graph read's garbage once, give its free pages back,
    and move what survives (the index: about 10 tracked objects per memory) out of the
    cycle collector's view (``gc.freeze``). Otherwise every later full collection walks
    all of them while requests wait: 350-470 ms per 100k memories on this machine
    (docs/history.md), seconds for a 1M replica."""
    gc.collect()
    release_freed_memory()
    gc.freeze()


@dataclass
class FeedCounters:
    changes_skipped: int = 0
    """Change-stream upserts of partitions outside the replica's shards."""
    changes_applied: int = 0
    bad_changes: int = 0
    bootstrap_failures: int = 0


class IndexFeed:
    def __init__(
        self,
        *,
        conn: redis.Redis,
        store: MemorySource,
        vectors: VectorSource | None,
        changes_stream: str,
        index: MemoryIndex,
        shards: ShardSet,
        counters: FeedCounters,
        stop: threading.Event,
    ) -> None:
        self._redis = conn
        self._store = store
        self._vectors = vectors
        self._changes_stream = changes_stream
        self._index = index
        self._shards = shards
        self._counters = counters
        self._stop = stop
        self.position = "0-0"
        """The last change-stream entry applied."""
        self.bootstrapped = False
        """True once the graph's memories are in the index."""
        self.graph_read_at = time.monotonic()
        """When the graph was last read whole."""
        self._loaded: tuple[str, list[Memory], dict[str, Vector] | None] | None = None
        """The background graph read, handed to the tail thread (the one index writer)."""
        self._loaded_lock = threading.Lock()
        self._reader: threading.Thread | None = None

    def bootstrap(self) -> int:
        """Load the graph, then catch up from the change stream position noted first
        (synchronously; :meth:`start` does it in the background when not done yet)."""
        self.position = self._stream_end()
        loaded = self._index.add_many(self._held_memories(), self._stored_vectors())
        keep_long_lived()
        self.graph_read_at = time.monotonic()
        self.bootstrapped = True
        self.apply_pending_changes(block_ms=None)
        log.info("recall_index_ready", memories=loaded)
        return loaded

    def start(self) -> threading.Thread | None:
        """Start the tail thread (and the graph read when not bootstrapped); None when
        stopped while Redis was away."""
        if not self.bootstrapped:
            noted = self._noted_stream_end()
            if noted is None:
                return None
            self.position = noted
            self._reader = threading.Thread(
                target=self._load_graph, args=(noted,), name="recall-bootstrap", daemon=True
            )
            self._reader.start()
        tail = threading.Thread(target=self._tail_changes, name="recall-tail", daemon=True)
        tail.start()
        return tail

    def join_reader(self, timeout_s: float) -> None:
        """Wait for the background graph read, which ends between two memories once
        stopped: the caller closes the graph driver next, and closing it under a read in
        flight breaks the driver's buffers (``BufferError`` in its ``close``)."""
        if self._reader is not None:
            self._reader.join(timeout_s)

    def _stream_end(self) -> str:
        last: Any = self._redis.xrevrange(self._changes_stream, count=1)
        return last[0][0].decode() if last else "0-0"

    def _noted_stream_end(self) -> str | None:
        """The change stream's last entry id, waiting for Redis; ``None`` if stopped."""
        while not self._stop.is_set():
            try:
                return self._stream_end()
            except redis.RedisError as exc:
                log.warning("recall_redis_error", error=type(exc).__name__)
                self._stop.wait(REDIS_ERROR_PAUSE_S)
        return None

    def _held_memories(self) -> Iterator[Memory]:
        """The graph's memories of this replica's shards (the graph read asks only for
        their workspaces; what else it returns is checked and dropped here)."""
        for memory in all_memories(self._store, workspace_filter(self._shards)):
            if holds_memory(self._shards, memory):
                yield memory

    def _stored_vectors(self, held: set[str] | None = None) -> dict[str, Vector] | None:
        """The vectors the ingest workers stored for this replica's model, if any (of
        the ``held`` memories only, when sharded)."""
        semantic = self._index.semantic
        if semantic is None or self._vectors is None:
            return None
        found = stored_vectors(self._vectors, semantic.model, workspace_filter(self._shards))
        if held is not None and self._shards.sharded:
            return {key: vector for key, vector in found.items() if key in held}
        return found

    def _load_graph(self, noted: str) -> None:
        """Background: read every memory from the graph, retrying while it is down, and
        hand them to the tail thread. Serving never waits for this."""
        for attempt in itertools.count():
            if self._stop.is_set():
                return
            try:
                memories = []
                for memory in self._held_memories():
                    if self._stop.is_set():
                        return  # stopping: the driver is about to close
                    memories.append(memory)
                stored = self._stored_vectors({m.id for m in memories})
            except Exception as exc:  # the graph down or restarting: try again later
                self._counters.bootstrap_failures += 1
                delay = BOOTSTRAP_BACKOFF_S[min(attempt, len(BOOTSTRAP_BACKOFF_S) - 1)]
                log.warning("recall_graph_unavailable", error=type(exc).__name__, retry_s=delay)
                self._stop.wait(delay)
                continue
            with self._loaded_lock:
                self._loaded = (noted, memories, stored)
            return

    def _apply_loaded(self) -> None:
        """Tail thread: index the graph's memories, then replay the stream from the
        position noted before the graph was read (later changes win again)."""
        with self._loaded_lock:
            loaded, self._loaded = self._loaded, None
        if loaded is None:
            return
        noted, memories, stored = loaded
        count = self._index.add_many(memories, stored)
        del memories, stored, loaded
        keep_long_lived()
        self.position = noted
        self.graph_read_at = time.monotonic()
        self.bootstrapped = True
        log.info("recall_index_ready", memories=count, background=True)

    def apply_pending_changes(self, block_ms: int | None) -> int:
        """Apply what the stream holds after the last applied entry; returns how many."""
        reply: Any = self._redis.xread(
            {self._changes_stream: self.position}, count=TAIL_BATCH, block=block_ms
        )
        applied = 0
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                self.position = entry_id.decode()
                try:
                    change = decode_change(fields)
                    if not held_upsert(self._shards, change):
                        self._counters.changes_skipped += 1
                        continue
                    self._index.apply(change)
                    applied += 1
                except InvalidPayloadError:
                    self._counters.bad_changes += 1
                    log.warning("recall_change_rejected", entry_id=self.position)
        self._counters.changes_applied += applied
        return applied

    def _tail_changes(self) -> None:
        while not self._stop.is_set():
            try:
                self._apply_loaded()
                # Short blocks until the graph read is applied, so it is applied promptly.
                self.apply_pending_changes(
                    block_ms=TAIL_BLOCK_MS if self.bootstrapped else TAIL_BLOCK_MS // 10
                )
            except redis.RedisError as exc:
                log.warning("recall_change_tail_error", error=type(exc).__name__)
                self._stop.wait(REDIS_ERROR_PAUSE_S)
