"""Per-partition vector search for the semantic signal: exact below a size, HNSW above.

Each vector is held once, as int8 codes with one float32 scale: below
:data:`~workers.recall.ann.ANN_MIN_ROWS` rows a partition keeps them as rows here (exact
search: ``(codes @ query) * scales``, then ``argpartition``); from that size on the codes
move into an HNSW graph (``ann``, which searches them where they are) and the rows here
are dropped. Readers take the block's storage reference once,
so growing or moving never shows them a half-written row; removed rows get scale 0 until
compaction. docs/recall.md ("The index", Vectors).
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from turngraph.workers.recall import ann as ann_module
from turngraph.workers.recall.ann import AnnGraph

__all__ = [
    "BLAS_THREADS", "CHUNK_ROWS", "COMPACT_DEAD_RATIO", "GROWTH", "INITIAL_ROWS", "INT8_MAX",
    "Vector", "VectorIndex", "limit_blas_threads", "quantise", "release_freed_memory",
]  # fmt: skip

INITIAL_ROWS = 64

GROWTH = 1.5
"""Capacity factor when a partition's int8 rows are full (2 wasted a third on average)."""

COMPACT_DEAD_RATIO = 0.25

INT8_MAX = 127

CHUNK_ROWS = 512
"""int8 rows converted to float32 per step of an exact search: a partition at once made
a 13 MB temporary at 5,000 x 640 and took twice as long (4.5 against 2.3 ms, loaded)."""

Vector = npt.NDArray[np.float32]

BLAS_THREADS = 1
"""Threads the BLAS library may use in this process. A query's matrix-vector product is
~0.4 ms on one core at 10k rows; with the default (one thread per core) the threads'
hand-offs made it 2.6 ms on an idle 2-core machine and ~11 ms per query in a replica
under load (docs/history.md). Recall replicas scale by process, not by BLAS threads."""


def limit_blas_threads() -> None:
    """Pin the process's BLAS to :data:`BLAS_THREADS` (idempotent; process-wide)."""
    threadpool_limits(limits=BLAS_THREADS, user_api="blas")


def release_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc ``malloc_trim``; nothing
    elsewhere). A bootstrap grows each partition's rows by copying and moves the large
    ones into graphs: the freed arrays otherwise stayed resident (~800 bytes per memory
    at 50k in one partition, ``bench.recall_index``)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):
        return


def quantise(vector: Vector) -> tuple[npt.NDArray[np.int8], float]:
    """int8 codes and the scale that gives the vector back (``codes * scale``)."""
    peak = float(np.abs(vector).max())
    scale = peak / INT8_MAX if peak > 0 else 1.0
    return np.rint(vector / scale).astype(np.int8), scale


@dataclass(slots=True)
class _Rows:
    """A partition's int8 rows; replaced (not resized) when full, so a reader's
    reference stays whole. Rows ``[0, size)`` are written; scale 0 marks a removed one."""

    codes: npt.NDArray[np.int8]
    scales: npt.NDArray[np.float32]
    ids: npt.NDArray[np.int64]
    size: int = 0

    @classmethod
    def empty(cls, dimension: int, capacity: int) -> _Rows:
        return cls(
            np.zeros((capacity, dimension), dtype=np.int8),
            np.zeros(capacity, dtype=np.float32),
            np.full(capacity, -1, dtype=np.int64),
        )

    def vectors(self, rows: npt.NDArray[np.intp] | list[int]) -> Vector:
        return self.codes[rows].astype(np.float32) * self.scales[rows, None]

    def nbytes(self) -> int:
        return self.codes.nbytes + self.scales.nbytes + self.ids.nbytes


@dataclass(slots=True)
class _Block:
    dimension: int
    rows: _Rows | None = None
    """The int8 rows while the partition is small (``None`` once they are in ``ann``)."""
    ann: AnnGraph | None = None
    row_of: dict[int, int] = field(default_factory=dict)
    """Row of each live id in ``rows`` (empty once the vectors live in ``ann``)."""
    dead: int = 0
    live: int = 0
    ann_min_rows: int = ann_module.ANN_MIN_ROWS
    ann_deferred: bool = False
    """Bulk loading: rows stay int8 (exact search); one graph is built at the end."""

    def __post_init__(self) -> None:
        self.rows = _Rows.empty(self.dimension, INITIAL_ROWS)

    def add(self, internal: int, vector: Vector) -> None:
        """Store (or replace) the vector of ``internal``."""
        if self.ann is not None:
            self.ann.add(np.array([internal], dtype=np.int64), vector[None, :])
            self.live = len(self.ann)
            return
        assert self.rows is not None
        codes, scale = quantise(vector)
        row = self.row_of.get(internal)
        if row is not None:  # replaced in place: one C-level write per column
            self.rows.codes[row] = codes
            self.rows.scales[row] = scale
            return
        rows = self.rows
        if rows.size == len(rows.ids):
            rows = self._grown(rows)
        rows.codes[rows.size] = codes
        rows.scales[rows.size] = scale
        rows.ids[rows.size] = internal
        self.row_of[internal] = rows.size
        rows.size += 1
        self.rows = rows
        self.live += 1
        if not self.ann_deferred and self.live >= self.ann_min_rows:
            self._move_into_graph()

    def _grown(self, rows: _Rows) -> _Rows:
        bigger = _Rows.empty(self.dimension, max(INITIAL_ROWS, int(len(rows.ids) * GROWTH)))
        bigger.codes[: rows.size] = rows.codes[: rows.size]
        bigger.scales[: rows.size] = rows.scales[: rows.size]
        bigger.ids[: rows.size] = rows.ids[: rows.size]
        bigger.size = rows.size
        return bigger

    def _move_into_graph(self) -> None:
        """Build the graph from the live rows' codes (the graph keeps its own copy, in
        chunks it never moves), then drop the rows (readers holding the old reference
        finish on it)."""
        rows = self.rows
        assert rows is not None
        live = np.flatnonzero(rows.scales[: rows.size] > 0)
        graph = AnnGraph(self.dimension, capacity=len(live))
        graph.add_codes(rows.ids[live], rows.codes[live], rows.scales[live])
        self.ann = graph
        self.rows, self.row_of, self.dead = None, {}, 0

    def defer_ann(self) -> None:
        self.ann_deferred = True

    def resume_ann(self) -> None:
        """Build the graph in one call (half the time of row-by-row inserts)."""
        self.ann_deferred = False
        if self.ann is None and self.live >= self.ann_min_rows:
            self._move_into_graph()

    def remove(self, internal: int) -> bool:
        if self.ann is not None:
            if not self.ann.remove(internal):
                return False
            self.live = len(self.ann)
            if self.ann.deleted > COMPACT_DEAD_RATIO * max(self.live, 1):
                self.ann = self.ann.compacted()  # rebuilt aside, then swapped
            return True
        row = self.row_of.pop(internal, None)
        if row is None or self.rows is None:
            return False
        self.rows.scales[row] = 0.0
        self.rows.codes[row] = 0
        self.dead += 1
        self.live -= 1
        if self.dead > COMPACT_DEAD_RATIO * max(self.live, 1):
            self._compact()
        return True

    def _compact(self) -> None:
        rows = self.rows
        assert rows is not None
        live = np.flatnonzero(rows.scales[: rows.size] > 0)
        fresh = _Rows.empty(self.dimension, max(INITIAL_ROWS, int(len(live) * GROWTH)))
        fresh.codes[: len(live)] = rows.codes[live]
        fresh.scales[: len(live)] = rows.scales[live]
        fresh.ids[: len(live)] = rows.ids[live]
        fresh.size = len(live)
        self.row_of = {int(internal): row for row, internal in enumerate(fresh.ids[: len(live)])}
        self.rows, self.dead = fresh, 0

    def search(
        self, query: Vector, limit: int, keep: Callable[[int], bool] | None = None
    ) -> list[tuple[int, float]]:
        ann = self.ann
        if ann is not None:
            found = ann.search(query, limit, keep)
            if found is not None:
                return found
            found = ann.exact_search(query, limit)
            return found if keep is None else [hit for hit in found if keep(hit[0])]
        found = self._search_rows(query, limit)
        return found if keep is None else [hit for hit in found if keep(hit[0])]

    def _search_rows(self, query: Vector, limit: int) -> list[tuple[int, float]]:
        rows = self.rows
        if rows is None:  # moved into a graph meanwhile: ask again
            return self.search(query, limit)
        size = rows.size
        if size == 0:
            return []
        sims = np.empty(size, dtype=np.float32)
        for start in range(0, size, CHUNK_ROWS):  # converted a cache-sized chunk at a time
            end = min(size, start + CHUNK_ROWS)
            sims[start:end] = rows.codes[start:end].astype(np.float32) @ query
        sims *= rows.scales[:size]
        live = rows.scales[:size] > 0
        rows_found = np.argpartition(-sims, limit)[:limit] if limit < size else np.arange(size)
        rows_found = rows_found[np.argsort(-sims[rows_found])]
        return [(int(rows.ids[r]), float(sims[r])) for r in rows_found if live[r]]

    def similarity(self, internals: list[int], query: Vector) -> dict[int, float]:
        ann = self.ann
        if ann is not None:
            labels, sims = ann.similarity(internals, query)
            return dict(zip(labels, sims.tolist(), strict=True)) if labels else {}
        rows, row_of = self.rows, self.row_of
        if rows is None:
            return self.similarity(internals, query)
        keys, at = [], []
        for internal in internals:
            row = row_of.get(internal)
            if row is not None and row < rows.size:
                keys.append(internal)
                at.append(row)
        if not keys:
            return {}
        sims = (rows.codes[at] @ query) * rows.scales[at]
        return dict(zip(keys, sims.tolist(), strict=True))

    def nbytes(self) -> tuple[int, int]:
        """``(int8 rows, HNSW graph with its codes)`` bytes held."""
        rows = self.rows
        return (rows.nbytes() if rows is not None else 0), (
            self.ann.nbytes() if self.ann is not None else 0
        )


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
        """Many rows are coming (bootstrap): keep small partitions' int8 rows (exact
        search) until :meth:`end_bulk` builds the graphs in one go."""
        self._bulk = True
        for block in self._blocks.values():
            block.defer_ann()

    def end_bulk(self) -> None:
        self._bulk = False
        for block in self._blocks.values():
            block.resume_ann()
        release_freed_memory()

    def add(self, partition: tuple[str, str], internal: int, vector: Vector) -> None:
        if vector.shape != (self.dimension,):
            raise ValueError("vector of the wrong dimension")
        known = self._partition_of.get(internal)
        if known is not None and known != partition:
            self.remove(internal)  # moved partition: the old row goes
        block = self._blocks.get(partition)
        if block is None:
            block = self._blocks[partition] = _Block(self.dimension, ann_min_rows=self.ann_min_rows)
            if self._bulk:
                block.defer_ann()
        block.add(internal, vector.astype(np.float32, copy=False))
        self._partition_of[internal] = partition

    def remove(self, internal: int) -> bool:
        partition = self._partition_of.pop(internal, None)
        block = self._blocks.get(partition) if partition is not None else None
        return block.remove(internal) if block is not None else False

    def search(
        self,
        partition: tuple[str, str],
        query: Vector,
        limit: int,
        keep: Callable[[int], bool] | None = None,
    ) -> list[tuple[int, float]]:
        """The ``limit`` most similar memories of a partition: ``(internal id, cosine)``,
        best first; with ``keep``, only those of them it keeps."""
        block = self._blocks.get(partition)
        return block.search(query, limit, keep) if block is not None else []

    def similarity(self, internals: list[int], query: Vector) -> dict[int, float]:
        """Cosine of the query with each given memory that has a vector (one gather and
        one product per partition)."""
        by_block: dict[tuple[str, str], list[int]] = {}
        for internal in internals:
            partition = self._partition_of.get(internal)
            if partition is not None:
                by_block.setdefault(partition, []).append(internal)
        found: dict[int, float] = {}
        for partition, keys in by_block.items():
            block = self._blocks.get(partition)
            if block is not None:
                found.update(block.similarity(keys, query))
        return found

    def nbytes(self) -> dict[str, int]:
        """Bytes held by component: ``vectors`` (int8 rows), ``hnsw`` (graphs with
        their int8 codes), ``vector_ids`` (the id → partition map, estimated)."""
        rows = hnsw = 0
        for block in self._blocks.values():
            r, h = block.nbytes()
            rows, hnsw = rows + r, hnsw + h
            rows += 100 * len(block.row_of)  # dict entry and int key, estimated
        return {"vectors": rows, "hnsw": hnsw, "vector_ids": 100 * len(self._partition_of)}
