"""The ingest workers embed what a batch made, once, for every recall replica.

After the graph write, each recallable memory the batch made or touched is embedded in
one call (texts: ``workers/embeddings/texts.py``); turn vectors are stored on their
``Episode`` nodes, and every vector travels on the change stream. An embedder failure
never fails the batch: the memories go out without a vector (the replicas embed them),
counted, and batches skip the embedder for a cool-down.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import structlog

from turngraph.schemas.changes import Embedding, MemoryKind, MemoryRecord
from turngraph.schemas.errors import TurngraphError
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.embeddings.texts import embedding_text, speaker_text

__all__ = [
    "FAILURE_COOLDOWN_S", "VECTOR_DECIMALS", "IngestEmbeddingCounters", "MemoryEmbedder",
    "VectorStore",
]  # fmt: skip

log = structlog.get_logger(__name__)

FAILURE_COOLDOWN_S = 30.0
"""How long the ingest workers leave a failed embedder alone (the replicas embed)."""

VECTOR_DECIMALS = 6
"""Digits kept per component: the graph and the stream then carry the same numbers."""


class VectorStore(Protocol):
    """Where turn vectors are kept (``workers.graph.vectors.GraphVectors``)."""

    def save(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None: ...

    def previous_texts(self, turns: Sequence[tuple[str, str, int]]) -> dict[str, str]: ...


@dataclass
class IngestEmbeddingCounters:
    embedded: int = 0
    failed: int = 0
    """Memories published without a vector because the embedder failed."""
    skipped: int = 0
    """Memories published without a vector during the cool-down after a failure."""


class MemoryEmbedder:
    """Embeds a batch's memories and stores the turns' vectors.

    After a failure the embedder is left alone for ``cooldown_s``: batches meanwhile go
    out without vectors at once (counted ``skipped``) instead of each waiting for a
    failing endpoint's timeout and retries.
    """

    def __init__(
        self,
        embedder: Embedder,
        store: VectorStore,
        *,
        cooldown_s: float = FAILURE_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.embedder = embedder
        self.store = store
        self.counters = IngestEmbeddingCounters()
        self._cooldown_s = cooldown_s
        self._clock = clock
        self._resume_at = 0.0

    def embed(
        self, memories: Sequence[MemoryRecord], previous: Mapping[str, str] | None = None
    ) -> dict[str, Embedding]:
        """``memory id -> Embedding`` for each memory (empty when the embedder failed
        or is cooling down after a failure); ``previous`` as in :meth:`texts`."""
        if not memories:
            return {}
        if self._clock() < self._resume_at:
            self.counters.skipped += len(memories)
            return {}
        texts = self.texts(memories, previous)
        try:
            rows = self.embedder.embed(texts)
        except TurngraphError as exc:
            return self._failed(len(memories), type(exc).__name__)
        if rows.shape[0] != len(memories) or not np.isfinite(rows).all():
            return self._failed(len(memories), "bad_vectors")
        # rounded in one numpy call (Python's round per component was 8 % of the worker);
        # the graph and the stream get the same tuple
        rounded = np.round(rows.astype(np.float64), VECTOR_DECIMALS).tolist()
        vectors = {memory.id: tuple(row) for memory, row in zip(memories, rounded, strict=True)}
        model = self.embedder.model
        self.store.save(
            model, {m.id: vectors[m.id] for m in memories if m.kind is MemoryKind.EPISODE}
        )
        self.counters.embedded += len(memories)
        return {key: Embedding(model=model, vector=vector) for key, vector in vectors.items()}

    def _failed(self, count: int, error: str) -> dict[str, Embedding]:
        self.counters.failed += count
        self._resume_at = self._clock() + self._cooldown_s
        log.warning("ingest_embedding_failed", memories=count, error=error)
        return {}

    def texts(
        self, memories: Sequence[MemoryRecord], previous: Mapping[str, str] | None = None
    ) -> list[str]:
        """Each memory's embedding text; previous turns from the batch, else from
        ``previous`` (``speaker_text`` by event id, read with the write), else read from
        the graph when ``previous`` is None."""
        own = {m.id: speaker_text(m.text, m.extra.get("speaker")) for m in memories}
        by_turn = {
            (m.session_id, m.turn_index): own[m.id]
            for m in memories
            if m.kind is MemoryKind.EPISODE and m.turn_index is not None
        }
        before_each: dict[str, str] = {}
        missing: list[tuple[str, str, int]] = []
        for m in memories:
            if m.kind is not MemoryKind.EPISODE or not m.turn_index or not m.session_id:
                continue
            before = by_turn.get((m.session_id, m.turn_index - 1))
            if before is not None:
                before_each[m.id] = before
            elif previous is not None:
                if m.id in previous:
                    before_each[m.id] = previous[m.id]
            else:
                missing.append((m.id, m.session_id, m.turn_index))
        if missing:
            before_each.update(self.store.previous_texts(missing))
        return [embedding_text(own[m.id], before_each.get(m.id)) for m in memories]
