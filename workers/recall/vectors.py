"""Per-partition vector search for the semantic signal: exact below a size, HNSW above.

Each partition (workspace or user) holds its memories' unit vectors as rows of one
float32 matrix; a query's cosine similarities are ``matrix @ query``, and the best rows
come from ``argpartition``. From :data:`~workers.recall.ann.ANN_MIN_ROWS` rows on, a
partition also keeps an HNSW graph (``ann``) that answers the nearest-rows query
instead (measured: docs/recall.md); the matrix still gives the exact cosine of any other
candidate (one gather and one product).

One writer (the index, under its lock); readers take the matrix reference and the row
count once, so growing (copy into a larger matrix, then swap) never shows them a
half-written row. Removed rows are zeroed and their id set to -1 until compaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from turngraph.workers.recall import ann as ann_module
from turngraph.workers.recall.ann import AnnGraph

INITIAL_ROWS = 256

COMPACT_DEAD_RATIO = 0.25

Vector = npt.NDArray[np.float32]

BLAS_THREADS = 1
"""Threads the BLAS library may use in this process. A query's matrix-vector product is
~0.4 ms on one core at 10k rows; with the default (one thread per core) the threads'
hand-offs made it 2.6 ms on an idle 2-core machine and ~11 ms per query in a replica
under load (docs/recall.md). Recall replicas scale by process, not by BLAS threads."""


def limit_blas_threads() -> None:
    """Pin the process's BLAS to :data:`BLAS_THREADS` (idempotent; process-wide)."""
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")


@dataclass(slots=True)
class _Block:
    dimension: int
    matrix: Vector = field(init=False)
    ids: npt.NDArray[np.int64] = field(init=False)
    size: int = 0
    dead: int = 0
    row_of: dict[int, int] = field(default_factory=dict)
    ann: AnnGraph | None = None
    ann_min_rows: int = ann_module.ANN_MIN_ROWS
    ann_deferred: bool = False
    """Bulk loading: no graph is kept up to date row by row; one is built at the end."""

    def __post_init__(self) -> None:
        self.matrix = np.zeros((INITIAL_ROWS, self.dimension), dtype=np.float32)
        self.ids = np.full(INITIAL_ROWS, -1, dtype=np.int64)

    def append(self, internal: int, vector: Vector) -> None:
        if self.size == len(self.ids):
            capacity = 2 * len(self.ids)
            matrix = np.zeros((capacity, self.dimension), dtype=np.float32)
            matrix[: self.size] = self.matrix[: self.size]
            ids = np.full(capacity, -1, dtype=np.int64)
            ids[: self.size] = self.ids[: self.size]
            self.matrix, self.ids = matrix, ids
        self.matrix[self.size] = vector
        self.ids[self.size] = internal
        self.row_of[internal] = self.size
        self.size += 1
        if self.ann_deferred:
            return
        if self.ann is not None:
            self.ann.add(
                self.ids[self.size - 1 : self.size], self.matrix[self.size - 1 : self.size]
            )
        elif self.size - self.dead >= self.ann_min_rows:
            self.ann = self._build_ann()

    def defer_ann(self) -> None:
        self.ann_deferred, self.ann = True, None  # exact search meanwhile

    def resume_ann(self) -> None:
        """Build the graph in one call (half the time of row-by-row inserts)."""
        self.ann_deferred = False
        if self.size - self.dead >= self.ann_min_rows:
            self.ann = self._build_ann()

    def _build_ann(self) -> AnnGraph:
        live = np.flatnonzero(self.ids[: self.size] >= 0)
        graph = AnnGraph(self.dimension, capacity=2 * len(live))
        graph.add(self.ids[live], self.matrix[live])
        return graph

    def remove(self, internal: int) -> bool:
        row = self.row_of.pop(internal, None)
        if row is None:
            return False
        self.ids[row] = -1
        self.matrix[row] = 0.0
        self.dead += 1
        if self.ann is not None:
            self.ann.remove(internal)
        if self.dead > COMPACT_DEAD_RATIO * max(self.size - self.dead, 1):
            self._compact()
        return True

    def _compact(self) -> None:
        live = np.flatnonzero(self.ids[: self.size] >= 0)
        capacity = max(INITIAL_ROWS, 2 * len(live))
        matrix = np.zeros((capacity, self.dimension), dtype=np.float32)
        matrix[: len(live)] = self.matrix[live]
        ids = np.full(capacity, -1, dtype=np.int64)
        ids[: len(live)] = self.ids[live]
        self.row_of = {int(internal): row for row, internal in enumerate(ids[: len(live)])}
        self.matrix, self.ids, self.size, self.dead = matrix, ids, len(live), 0
        if self.ann is not None and not self.ann_deferred:  # rebuilt aside, then swapped
            self.ann = self._build_ann() if len(live) >= self.ann_min_rows else None


class VectorIndex:
    """Unit vectors of the indexed memories, per partition, keyed by the index's ids."""

    def __init__(self, dimension: int, ann_min_rows: int | None = None) -> None:
        limit_blas_threads()
        self.dimension = dimension
        self.ann_min_rows = ann_module.ANN_MIN_ROWS if ann_min_rows is None else ann_min_rows
        self._blocks: dict[tuple[str, str], _Block] = {}
        self._partition_of: dict[int, tuple[str, str]] = {}
        self._bulk = False

    def __len__(self) -> int:
        return len(self._partition_of)

    def begin_bulk(self) -> None:
        """Many rows are coming (bootstrap): stop maintaining HNSW graphs row by row
        (searches are exact meanwhile) until :meth:`end_bulk` builds them in one go."""
        self._bulk = True
        for block in self._blocks.values():
            block.defer_ann()

    def end_bulk(self) -> None:
        self._bulk = False
        for block in self._blocks.values():
            block.resume_ann()

    def add(self, partition: tuple[str, str], internal: int, vector: Vector) -> None:
        if vector.shape != (self.dimension,):
            raise ValueError("vector of the wrong dimension")
        if internal in self._partition_of:
            self.remove(internal)  # a new vector for the same memory replaces the old
        block = self._blocks.get(partition)
        if block is None:
            block = self._blocks[partition] = _Block(self.dimension, ann_min_rows=self.ann_min_rows)
            if self._bulk:
                block.defer_ann()
        block.append(internal, vector)
        self._partition_of[internal] = partition

    def remove(self, internal: int) -> bool:
        partition = self._partition_of.pop(internal, None)
        block = self._blocks.get(partition) if partition is not None else None
        return block.remove(internal) if block is not None else False

    def search(
        self, partition: tuple[str, str], query: Vector, limit: int
    ) -> list[tuple[int, float]]:
        """The ``limit`` most similar memories of a partition: ``(internal id, cosine)``."""
        block = self._blocks.get(partition)
        if block is None:
            return []
        ann = block.ann
        if ann is not None:
            found = ann.search(query, limit)
            if found is not None:
                return found
        matrix, ids, size = block.matrix, block.ids, block.size
        if size == 0:
            return []
        sims = matrix[:size] @ query
        rows = np.argpartition(-sims, limit)[:limit] if limit < size else np.arange(size)
        rows = rows[np.argsort(-sims[rows])]
        return [(int(ids[r]), float(sims[r])) for r in rows if ids[r] >= 0]

    def similarity(self, internals: list[int], query: Vector) -> dict[int, float]:
        """Cosine of the query with each given memory that has a vector (one gather and
        one product per partition)."""
        by_block: dict[tuple[str, str], tuple[list[int], list[int]]] = {}
        for internal in internals:
            partition = self._partition_of.get(internal)
            block = self._blocks.get(partition) if partition is not None else None
            row = block.row_of.get(internal) if block is not None else None
            if partition is not None and row is not None:
                keys, rows = by_block.setdefault(partition, ([], []))
                keys.append(internal)
                rows.append(row)
        found: dict[int, float] = {}
        for partition, (keys, rows) in by_block.items():
            sims = self._blocks[partition].matrix[rows] @ query
            found.update(zip(keys, sims.tolist(), strict=True))
        return found
