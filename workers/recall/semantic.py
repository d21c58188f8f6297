"""The semantic signal of a recall replica: memory vectors, query vectors, candidates.

The ingest workers embed every memory once and send its vector on the change stream;
turn vectors are also stored in the graph and read at bootstrap (docs/recall.md). A
replica embeds only what arrives without a vector of its own model (at bootstrap in
batches, then per change-stream entry), from the same text (``workers/embeddings/
texts.py``). A memory whose embedding failed stays searchable lexically (counted).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import structlog

from turngraph.schemas.errors import TurngraphError
from turngraph.workers.embeddings.deadline import QueryEmbedder
from turngraph.workers.embeddings.factory import query_embedder
from turngraph.workers.embeddings.protocol import Embedder, Vectors
from turngraph.workers.recall.vectors import Vector, VectorIndex

__all__ = [
    "EMBED_BATCH", "QUERY_BUDGET_MAX_S", "QUERY_BUDGET_SHARE", "SEMANTIC_CANDIDATES",
    "SESSION_OVERFETCH", "SemanticCounters", "SemanticSignal",
]  # fmt: skip

log = structlog.get_logger(__name__)

SEMANTIC_CANDIDATES = 60
"""Nearest memories per partition entering the fusion (as many as lexical)."""

SESSION_OVERFETCH = 8
"""Session-scoped search fetches this many times more rows, then keeps the session's."""

EMBED_BATCH = 512
"""Memories embedded per call at bootstrap."""

QUERY_BUDGET_SHARE = 0.5
"""Share of the request's remaining deadline the query embedding may take."""

QUERY_BUDGET_MAX_S = 0.25
"""Never wait longer than this for a query vector, whatever the deadline."""


@dataclass
class SemanticCounters:
    embedded: int = 0
    """Memories this replica embedded itself."""
    received: int = 0
    """Vectors taken as the ingest workers made them (graph at bootstrap, or stream)."""
    foreign: int = 0
    """Vectors ignored: another model, or another dimension (then embedded here)."""
    failed: int = 0
    """Memories indexed without a vector (the embedder failed); lexical still finds them."""


class SemanticSignal:
    """Vectors for one :class:`~workers.recall.index.MemoryIndex`, from one embedder."""

    def __init__(self, embedder: Embedder, ann_min_rows: int | None = None) -> None:
        self.embedder = embedder
        self._ann_min_rows = ann_min_rows
        """Rows from which a partition is searched through HNSW (None: ``ann``'s default)."""
        self.queries: QueryEmbedder = query_embedder(embedder)
        self.vectors: VectorIndex | None = None
        self.counters = SemanticCounters()
        self._bulk = False

    @property
    def model(self) -> str:
        return self.embedder.model

    def embed_texts(self, texts: Sequence[str]) -> list[Vector | None]:
        """One vector per text (``None`` where the embedder failed), in batches."""
        found: list[Vector | None] = []
        for start in range(0, len(texts), EMBED_BATCH):
            chunk = texts[start : start + EMBED_BATCH]
            try:
                rows: Vectors = self.embedder.embed(chunk)
            except TurngraphError as exc:
                self.counters.failed += len(chunk)
                log.warning(
                    "recall_embedding_failed", memories=len(chunk), error=type(exc).__name__
                )
                found += [None] * len(chunk)
                continue
            self.counters.embedded += len(chunk)
            found += list(rows)
        return found

    def store(self, partition: tuple[str, str], internal: int, vector: Vector | None) -> None:
        if vector is None or not np.isfinite(vector).all():
            return
        if self.vectors is None:
            self.vectors = VectorIndex(int(vector.shape[0]), self._ann_min_rows)
            if self._bulk:
                self.vectors.begin_bulk()
        if vector.shape[0] == self.vectors.dimension:
            self.vectors.add(partition, internal, vector)

    def usable(self, model: str, vector: Sequence[float]) -> Vector | None:
        """A sent vector as this signal's own, or ``None`` (another model or dimension,
        or not finite: counted, and the memory is embedded here instead)."""
        row = np.asarray(vector, dtype=np.float32)
        dimension = self.embedder.dimension or row.shape[-1]  # an endpoint's is learnt
        if model != self.model or row.shape != (dimension,):
            self.counters.foreign += 1
            return None
        norm = float(np.linalg.norm(row))
        if not np.isfinite(norm) or norm == 0.0:
            self.counters.foreign += 1
            return None
        return row / norm

    def begin_bulk(self) -> None:
        """A bootstrap is loading many vectors: HNSW graphs are built once, at the end."""
        self._bulk = True
        if self.vectors is not None:
            self.vectors.begin_bulk()

    def end_bulk(self) -> None:
        self._bulk = False
        if self.vectors is not None:
            self.vectors.end_bulk()

    def remove(self, internal: int) -> None:
        if self.vectors is not None:
            self.vectors.remove(internal)

    def ready(self) -> bool:
        return self.vectors is not None and len(self.vectors) > 0

    def candidates(
        self,
        partitions: Iterable[tuple[tuple[str, str], Callable[[int], bool] | None]],
        query: Vector,
        pool: Iterable[int],
        restated: Iterable[tuple[tuple[str, str], Callable[[int], bool] | None]] = (),
    ) -> dict[int, float]:
        """Min-max normalised cosine for the nearest memories of each partition and for
        every other candidate in ``pool``: 1.0 for the nearest, 0.0 at the K-th nearest
        (and below). ``partitions`` are ``(partition, keep)`` pairs; ``keep`` restricts a
        partition to some of its memories (one session). The ``restated`` partitions (a
        partition's restatements, ``postings.restated_key``) add their nearest above the
        K-th, on the same scale (a digest nearer than every turn scores above 1.0): the
        nearest turns and their range are those of an index without restatements."""
        vectors = self.vectors
        if vectors is None:
            return {}
        sims = self._nearest(vectors, partitions, query)
        if not sims:
            return {}
        high, low = max(sims.values()), min(sims.values())
        restatements = self._nearest(vectors, restated, query)
        sims.update(restatements)
        rest = [key for key in pool if key not in sims]
        sims.update(vectors.similarity(rest, query))
        span = high - low
        if span <= 1e-9:
            return {key: 1.0 for key, value in sims.items() if value >= high}
        return {
            key: (value - low) / span if key in restatements else min(1.0, (value - low) / span)
            for key, value in sims.items()
            if value > low
        }

    @staticmethod
    def _nearest(
        vectors: VectorIndex,
        partitions: Iterable[tuple[tuple[str, str], Callable[[int], bool] | None]],
        query: Vector,
    ) -> dict[int, float]:
        sims: dict[int, float] = {}
        for partition, keep in partitions:
            limit = SEMANTIC_CANDIDATES * (SESSION_OVERFETCH if keep else 1)
            hits = vectors.search(partition, query, limit, keep)
            sims.update(hits[:SEMANTIC_CANDIDATES])
        return sims
