"""The ingest workers embed what a batch made, once, for every recall replica.

After the graph write, each recallable memory the batch made or touched is embedded
(one batched call; a turn's text carries the previous turn of its session, from the
batch or from the graph: ``workers/embeddings/texts.py``), turn vectors are stored on
their ``Episode`` nodes with the model's name and dimension, and every vector travels on
the change stream's ``embedding`` field. An embedder failure never fails the batch: the
memories go out without a vector (the replicas embed them) and the failure is counted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import structlog

from schemas.changes import Embedding, MemoryKind, MemoryRecord
from schemas.errors import TurngraphError
from workers.embeddings.protocol import Embedder
from workers.embeddings.texts import embedding_text, speaker_text

log = structlog.get_logger(__name__)

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


class MemoryEmbedder:
    """Embeds a batch's memories and stores the turns' vectors."""

    def __init__(self, embedder: Embedder, store: VectorStore) -> None:
        self.embedder = embedder
        self.store = store
        self.counters = IngestEmbeddingCounters()

    def embed(self, memories: Sequence[MemoryRecord]) -> dict[str, Embedding]:
        """``memory id -> Embedding`` for each memory (empty when the embedder failed)."""
        if not memories:
            return {}
        texts = self.texts(memories)
        try:
            rows = self.embedder.embed(texts)
        except TurngraphError as exc:
            self.counters.failed += len(memories)
            log.warning("ingest_embedding_failed", memories=len(memories), error=type(exc).__name__)
            return {}
        if rows.shape[0] != len(memories) or not np.isfinite(rows).all():
            self.counters.failed += len(memories)
            log.warning("ingest_embedding_failed", memories=len(memories), error="bad_vectors")
            return {}
        vectors = {
            memory.id: tuple(round(float(x), VECTOR_DECIMALS) for x in row)
            for memory, row in zip(memories, rows, strict=True)
        }
        model = self.embedder.model
        self.store.save(
            model, {m.id: vectors[m.id] for m in memories if m.kind is MemoryKind.EPISODE}
        )
        self.counters.embedded += len(memories)
        return {key: Embedding(model=model, vector=vector) for key, vector in vectors.items()}

    def texts(self, memories: Sequence[MemoryRecord]) -> list[str]:
        """Each memory's embedding text; previous turns from the batch, else the graph."""
        own = {m.id: speaker_text(m.text, m.extra.get("speaker")) for m in memories}
        by_turn = {
            (m.session_id, m.turn_index): own[m.id]
            for m in memories
            if m.kind is MemoryKind.EPISODE and m.turn_index is not None
        }
        previous: dict[str, str] = {}
        missing: list[tuple[str, str, int]] = []
        for m in memories:
            if m.kind is not MemoryKind.EPISODE or not m.turn_index or not m.session_id:
                continue
            before = by_turn.get((m.session_id, m.turn_index - 1))
            if before is not None:
                previous[m.id] = before
            else:
                missing.append((m.id, m.session_id, m.turn_index))
        previous.update(self.store.previous_texts(missing))
        return [embedding_text(own[m.id], previous.get(m.id)) for m in memories]
