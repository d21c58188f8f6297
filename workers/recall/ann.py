"""An approximate nearest-neighbour graph (HNSW, ``usearch``) over one partition's vectors.

Above :data:`ANN_MIN_ROWS` rows it answers what exact search (``vectors``) would, in a
fraction of the time; labels are the index's internal ids, a removed memory is removed
from the graph (kept as a tombstone until the graph is rebuilt).

Each row is held once, as the small partitions hold theirs: int8 codes with one float32
scale (:func:`quantise_rows`). The graph searches those codes where they are (``usearch``
with ``copy=False``: its nodes point into our chunks, and the cosine of int8 codes is
that of the rows within a few thousandths), and the exact cosine of a candidate is one
numpy gather of the same codes against the float32 query. A chunk of codes is never
moved or resized while its graph lives, so the graph's pointers stay valid; a graph
grows by new chunks. The hits are rescored from the codes, so every cosine a search
sees is of one precision. One lock per graph serialises its searches with its writes.
docs/recall.md ("The index", Vectors).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

import numpy as np
import numpy.typing as npt
from usearch.index import Index

__all__ = [
    "ADD_BATCH", "ANN_MIN_ROWS", "CHUNK_MIN_ROWS", "CONNECTIVITY", "EF_CONSTRUCTION",
    "EF_SEARCH", "GROWTH", "INITIAL_CAPACITY", "INT8_MAX", "AnnGraph", "quantise_rows",
]  # fmt: skip

ANN_MIN_ROWS = 5_000
"""Rows from which a partition gets an HNSW graph (exact search below: ~0.2 ms at 5k)."""

CONNECTIVITY = 16
"""HNSW ``M``: links per node."""

EF_CONSTRUCTION = 128

EF_SEARCH = 128
"""Candidates explored per query (``usearch`` explores at least the number asked for)."""

INITIAL_CAPACITY = 8_192

GROWTH = 1.25
"""Rows a new chunk adds, as a factor of the rows held: a chunk is allocated whole (its
pages are touched as rows are written)."""

CHUNK_MIN_ROWS = 1_024

ADD_BATCH = 4_096
"""Rows handed to the graph per call while building (the graph copies only their keys)."""

INT8_MAX = 127


def quantise_rows(
    rows: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int8], npt.NDArray[np.float32]]:
    """int8 codes and one scale per row that give the rows back (``codes * scale``),
    as ``vectors.quantise`` makes them for one row."""
    peaks = np.abs(rows).max(axis=1)
    scales = np.where(peaks > 0, peaks / INT8_MAX, 1.0).astype(np.float32)
    return np.rint(rows / scales[:, None]).astype(np.int8), scales


class AnnGraph:
    """HNSW over the int8 codes of unit vectors (cosine), labelled by internal id."""

    def __init__(self, dimension: int, capacity: int = INITIAL_CAPACITY) -> None:
        self._graph = Index(
            ndim=dimension,
            metric="cos",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EF_CONSTRUCTION,
            expansion_search=EF_SEARCH,
        )
        self._lock = threading.Lock()
        self._dimension = dimension
        self._first_chunk = max(capacity, 1)
        self.exact_only = False
        """Benches: answer every query by comparing all rows (``exact_search``)."""
        self._chunks: list[npt.NDArray[np.int8]] = []
        """The codes, slot after slot; the graph points into them (never moved)."""
        self._starts: list[int] = []
        """The first slot of each chunk."""
        self._size = 0
        """Slots written."""
        self._labels = np.zeros(0, dtype=np.int64)
        """Each slot's label (growable: the graph does not point into it)."""
        self._scales = np.zeros(0, dtype=np.float32)
        """Each slot's scale; 0 once its label is removed."""
        self._order: npt.NDArray[np.intp] | None = None
        """Slots in label order, when the labels were not added in ascending order."""
        self._removed = 0

    def __len__(self) -> int:
        return len(self._graph)

    @property
    def deleted(self) -> int:
        """Labels removed since the graph was built (tombstones in the graph)."""
        return self._removed

    # -- writing ---------------------------------------------------------------------

    def add(self, labels: npt.NDArray[np.int64], rows: npt.NDArray[np.float32]) -> None:
        """Add rows under their labels; an existing label's row is replaced."""
        codes, scales = quantise_rows(np.asarray(rows, dtype=np.float32).reshape(len(labels), -1))
        self.add_codes(labels, codes, scales)

    def add_codes(
        self,
        labels: npt.NDArray[np.int64],
        codes: npt.NDArray[np.int8],
        scales: npt.NDArray[np.float32],
    ) -> None:
        """Add int8 rows (``quantise_rows``) under their labels; an existing label's row
        is replaced in its slot and linked again."""
        if len(labels) == 0:
            return
        labels = np.asarray(labels, dtype=np.int64)
        with self._lock:
            slots, found = self._find(labels)
            old = self._held(slots, found)
            for i in np.flatnonzero(found).tolist():  # replaced (rare): one at a time
                slot = int(slots[i])
                view = self._row(slot)
                view[:] = codes[i]
                self._scales[slot] = scales[i]
                if old[i]:
                    self._graph.remove(int(labels[i]))
                self._graph.add(int(labels[i]), view, copy=False, threads=1)
            fresh = np.flatnonzero(~found)
            if len(fresh):
                self._append(labels[fresh], codes[fresh], scales[fresh])

    def _append(
        self,
        labels: npt.NDArray[np.int64],
        codes: npt.NDArray[np.int8],
        scales: npt.NDArray[np.float32],
    ) -> None:
        """New labels into new slots (under the lock), linked chunk piece by piece."""
        start = self._size
        end = start + len(labels)
        if end > len(self._labels):
            capacity = max(end, int(GROWTH * len(self._labels)), self._first_chunk)
            grown_labels = np.zeros(capacity, dtype=np.int64)
            grown_scales = np.zeros(capacity, dtype=np.float32)
            grown_labels[:start] = self._labels[:start]
            grown_scales[:start] = self._scales[:start]
            self._labels, self._scales = grown_labels, grown_scales
        ascending = self._order is None and (
            start == 0 or int(labels[0]) > int(self._labels[start - 1])
        )
        ascending = ascending and bool(np.all(labels[1:] > labels[:-1]))
        self._labels[start:end] = labels
        self._scales[start:end] = scales
        done = 0
        while done < len(labels):
            slot = start + done
            chunk, row = self._chunk_of(slot)
            take = min(len(labels) - done, len(self._chunks[chunk]) - row, ADD_BATCH)
            view = self._chunks[chunk][row : row + take]
            view[:] = codes[done : done + take]
            self._size = slot + take
            self._graph.add(labels[done : done + take], view, copy=False, threads=1)
            done += take
        if not ascending:
            self._order = np.argsort(self._labels[:end], kind="stable")

    def _chunk_of(self, slot: int) -> tuple[int, int]:
        """The chunk and row of a slot, allocating a chunk when ``slot`` is past the last."""
        if not self._chunks or slot >= self._starts[-1] + len(self._chunks[-1]):
            rows = self._first_chunk if not self._chunks else int((GROWTH - 1) * slot)
            self._starts.append(slot)
            self._chunks.append(np.zeros((max(rows, CHUNK_MIN_ROWS), self._dimension), np.int8))
            return len(self._chunks) - 1, 0
        chunk = int(np.searchsorted(self._starts, slot, side="right")) - 1
        return chunk, slot - self._starts[chunk]

    def _row(self, slot: int) -> npt.NDArray[np.int8]:
        chunk, row = self._chunk_of(slot)
        return self._chunks[chunk][row]

    def remove(self, label: int) -> bool:
        """Remove a label; False when it is not in the graph (or removed already)."""
        with self._lock:
            slots, found = self._find(np.array([label], dtype=np.int64))
            if not found[0] or self._scales[slots[0]] == 0:
                return False
            self._graph.remove(label)
            self._scales[slots[0]] = 0.0
            self._removed += 1
            return True

    # -- reading (under the lock) ----------------------------------------------------

    def _find(
        self, labels: npt.NDArray[np.int64]
    ) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """Each label's slot, and whether it has one."""
        size = self._size
        if size == 0:
            return np.zeros(len(labels), dtype=np.intp), np.zeros(len(labels), dtype=bool)
        order = self._order
        held = self._labels[:size] if order is None else self._labels[order]
        at = np.minimum(np.searchsorted(held, labels), size - 1)
        found = held[at] == labels
        slots = at if order is None else order[at]
        return slots, found

    def _live(
        self, labels: list[int] | npt.NDArray[np.int64]
    ) -> tuple[list[int], npt.NDArray[np.intp]]:
        """The given labels that are live, and their slots."""
        keys = np.asarray(labels, dtype=np.int64)
        slots, found = self._find(keys)
        live = self._held(slots, found)
        return keys[live].tolist(), slots[live]

    def _held(
        self, slots: npt.NDArray[np.intp], found: npt.NDArray[np.bool_]
    ) -> npt.NDArray[np.bool_]:
        """Which found slots hold a live row (scale 0: removed)."""
        live = found.copy()
        live[found] = self._scales[slots[found]] > 0
        return live

    def _codes(self, slots: npt.NDArray[np.intp]) -> npt.NDArray[np.int8]:
        """The codes of the given slots, one gather per chunk they are in."""
        if len(self._chunks) == 1:
            return self._chunks[0][slots]
        chunks = np.searchsorted(self._starts, slots, side="right") - 1
        found = np.empty((len(slots), self._dimension), dtype=np.int8)
        for chunk in np.unique(chunks).tolist():
            mine = chunks == chunk
            found[mine] = self._chunks[chunk][slots[mine] - self._starts[chunk]]
        return found

    def live_labels(self) -> list[int]:
        with self._lock:
            size = self._size
            return self._labels[:size][self._scales[:size] > 0].tolist()

    def vectors(self, labels: list[int]) -> tuple[list[int], npt.NDArray[np.float32]]:
        """The stored vectors of the given live labels (others are left out), from the
        int8 codes (``codes * scale``)."""
        with self._lock:
            wanted, slots = self._live(labels)
            codes, scales = self._codes(slots), self._scales[slots]
        found = codes.astype(np.float32) * scales[:, None]
        return wanted, found.reshape(len(wanted), self._dimension)

    def similarity(
        self, labels: list[int], query: npt.NDArray[np.float32]
    ) -> tuple[list[int], npt.NDArray[np.float32]]:
        """The cosine of ``query`` with each given live label (others are left out): the
        codes' product with the query, then each row's scale."""
        with self._lock:
            wanted, slots = self._live(labels)
            codes, scales = self._codes(slots), self._scales[slots]
        return wanted, (codes @ query) * scales

    def compacted(self) -> AnnGraph:
        """A new graph of the live labels only (built aside; the caller swaps it in)."""
        with self._lock:
            size = self._size
            live = np.flatnonzero(self._scales[:size] > 0)
            labels, scales = self._labels[live], self._scales[live]
            codes = self._codes(live)
        graph = AnnGraph(self._dimension, capacity=max(len(live), 1))
        graph.add_codes(labels, codes, scales)
        return graph

    def exact_search(self, query: npt.NDArray[np.float32], limit: int) -> list[tuple[int, float]]:
        """Every live row compared (when the graph cannot answer ``limit`` rows)."""
        labels, rows = self.vectors(self.live_labels())
        if not labels:
            return []
        sims = rows @ query
        order = np.argsort(-sims)[:limit]
        return [(labels[i], float(sims[i])) for i in order]

    def nbytes(self) -> int:
        """Bytes held: the chunks of codes (allocated whole), the slots' labels and
        scales, and ``usearch``'s own count of its graph (links, keys, tombstones)."""
        own = sum(chunk.nbytes for chunk in self._chunks) + self._labels.nbytes
        own += self._scales.nbytes + (self._order.nbytes if self._order is not None else 0)
        return own + int(self._graph.memory_usage)

    def search(
        self,
        query: npt.NDArray[np.float32],
        limit: int,
        keep: Callable[[int], bool] | None = None,
    ) -> list[tuple[int, float]] | None:
        """The ``limit`` nearest live rows, ``(label, cosine)``, best first (with
        ``keep``, those of them it keeps); ``None`` when the graph cannot answer (fewer
        reachable rows than asked): search exactly then. The graph compares the query's
        own int8 codes; the kept hits' cosines are then taken with the float32 query, as
        ``similarity`` does."""
        k = min(limit, len(self))
        if k <= 0:
            return []
        if self.exact_only:
            return None
        codes, _ = quantise_rows(query.reshape(1, -1))
        with self._lock:
            matches = self._graph.search(codes[0], k, threads=1)
            if len(matches) < k:
                return None
            labels = matches.keys.astype(np.int64)
            if keep is not None:
                labels = np.array([n for n in labels.tolist() if keep(n)], dtype=np.int64)
            slots, _ = self._find(labels)  # the graph returns live labels only
            sims = (self._codes(slots) @ query) * self._scales[slots]
        order = np.argsort(-sims, kind="stable")
        return list(
            zip(labels[order].tolist(), sims[order].astype(np.float64).tolist(), strict=True)
        )
