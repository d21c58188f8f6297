"""An approximate nearest-neighbour graph (HNSW, ``hnswlib``) over one partition's vectors.

Above :data:`ANN_MIN_ROWS` rows it answers what exact search (``vectors``) would, in a
fraction of the time; labels are the index's internal ids, a removed memory is marked
deleted. Its rows are also kept as int16 codes with one float32 scale
(:func:`quantise16`), so the exact cosine of any candidate is one numpy gather. One lock
per graph serialises ``knn_query`` with ``resize_index`` and ``mark_deleted``, which
hnswlib does not run side by side. docs/recall.md ("The index", Vectors).
"""

from __future__ import annotations

import threading

import hnswlib
import numpy as np
import numpy.typing as npt

__all__ = [
    "ANN_MIN_ROWS", "COMPACT_READ_ROWS", "CONNECTIVITY", "EF_CONSTRUCTION", "EF_SEARCH",
    "GROWTH", "INITIAL_CAPACITY", "LABEL_MAP_BYTES", "AnnGraph", "quantise16",
]  # fmt: skip

ANN_MIN_ROWS = 5_000
"""Rows from which a partition gets an HNSW graph (exact search below: ~0.2 ms at 5k)."""

CONNECTIVITY = 16
"""HNSW ``M``: links per node."""

EF_CONSTRUCTION = 128

EF_SEARCH = 128
"""Candidates explored per query (at least the number asked for): 95 % of the exact 60
nearest at 10k rows; 64 found 89 %, 200 found 97 % at 1.5x the time."""

INITIAL_CAPACITY = 8_192

GROWTH = 1.25
"""Capacity factor when a graph is full: ``hnswlib`` allocates a node's vector and links
for every slot up to its capacity, so doubling held ~1.5x the bytes on average."""

LABEL_MAP_BYTES = 48
"""Estimated bytes of one entry in ``hnswlib``'s label map (an ``unordered_map`` node)."""

INT16_MAX = 32_767

COMPACT_READ_ROWS = 512
"""Rows read back from the graph per lock hold while compacting (~10 ms)."""


def quantise16(
    rows: npt.NDArray[np.float32],
) -> tuple[npt.NDArray[np.int16], npt.NDArray[np.float32]]:
    """int16 codes and one scale per row that give the rows back (``codes * scale``)."""
    peaks = np.abs(rows).max(axis=1)
    scales = np.where(peaks > 0, peaks / INT16_MAX, 1.0).astype(np.float32)
    return np.rint(rows / scales[:, None]).astype(np.int16), scales


class AnnGraph:
    """HNSW over unit vectors (inner product), labelled by internal id."""

    def __init__(self, dimension: int, capacity: int = INITIAL_CAPACITY) -> None:
        self._graph = hnswlib.Index(space="ip", dim=dimension)
        self._graph.init_index(
            max_elements=max(capacity, 1), ef_construction=EF_CONSTRUCTION, M=CONNECTIVITY
        )
        self._graph.set_num_threads(1)
        self._graph.set_ef(EF_SEARCH)
        self._lock = threading.Lock()
        self._dimension = dimension
        self.exact_only = False
        """Benches: answer every query by comparing all rows (``exact_search``)."""
        self._deleted: set[int] = set()
        """Labels marked deleted (kept by ``hnswlib`` until the graph is rebuilt)."""
        self._codes = np.zeros((max(capacity, 1), dimension), dtype=np.int16)
        """Each label's row as given to the graph, int16 (``_slot_of``); replaced when grown."""
        self._scales = np.zeros(max(capacity, 1), dtype=np.float32)
        self._slot_of: dict[int, int] = {}

    def __len__(self) -> int:
        return self._graph.get_current_count() - len(self._deleted)

    @property
    def deleted(self) -> int:
        return len(self._deleted)

    def add(self, labels: npt.NDArray[np.int64], rows: npt.NDArray[np.float32]) -> None:
        """Add rows under their labels (new labels: the index never reuses an id)."""
        if len(labels) == 0:
            return
        with self._lock:
            needed = self._graph.get_current_count() + len(labels)
            if needed > self._graph.get_max_elements():
                grown = int(GROWTH * self._graph.get_max_elements())
                self._graph.resize_index(max(needed, grown))
            # An existing label is updated in place (and undeleted) by hnswlib.
            self._graph.add_items(rows, labels, replace_deleted=False)
            self._deleted.difference_update(int(label) for label in labels)
            self._keep(labels, rows)

    def _keep(self, labels: npt.NDArray[np.int64], rows: npt.NDArray[np.float32]) -> None:
        """Copy the rows into our matrix (under the lock): new labels at the end."""
        slots = []
        size = len(self._slot_of)
        for label in labels.tolist():
            slot = self._slot_of.get(label)
            if slot is None:
                slot = self._slot_of[label] = size
                size += 1
            slots.append(slot)
        if size > len(self._scales):
            capacity = max(size, int(GROWTH * len(self._scales)))
            codes = np.zeros((capacity, self._dimension), np.int16)
            scales = np.zeros(capacity, np.float32)
            codes[: len(self._codes)] = self._codes
            scales[: len(self._scales)] = self._scales
            self._codes, self._scales = codes, scales
        codes, scales = quantise16(np.asarray(rows, dtype=np.float32).reshape(len(slots), -1))
        self._codes[slots] = codes
        self._scales[slots] = scales

    def remove(self, label: int) -> bool:
        """Mark a label deleted; False when it is not in the graph (or deleted already)."""
        with self._lock:
            if label in self._deleted:
                return False
            try:
                self._graph.mark_deleted(label)
            except RuntimeError:
                return False
            self._deleted.add(label)
            return True

    def live_labels(self) -> list[int]:
        with self._lock:
            return [label for label in self._graph.get_ids_list() if label not in self._deleted]

    def vectors(self, labels: list[int]) -> tuple[list[int], npt.NDArray[np.float32]]:
        """The stored vectors of the given live labels (others are left out), from the
        int16 copy (within ~5e-6 of the graph's float32 rows)."""
        with self._lock:
            slot_of, deleted = self._slot_of, self._deleted
            wanted = [label for label in labels if label in slot_of and label not in deleted]
            slots = [slot_of[label] for label in wanted]
            codes, scales = self._codes[slots], self._scales[slots]
        found = codes.astype(np.float32) * scales[:, None]
        return wanted, found.reshape(len(wanted), self._dimension)

    def similarity(
        self, labels: list[int], query: npt.NDArray[np.float32]
    ) -> tuple[list[int], npt.NDArray[np.float32]]:
        """The cosine of ``query`` with each given live label (others are left out), from
        the int16 copy: the codes' product with the query, then each row's scale (no
        float32 matrix of the rows is made: ~4x less time at 600 labels)."""
        with self._lock:
            slot_of, deleted = self._slot_of, self._deleted
            wanted = [label for label in labels if label in slot_of and label not in deleted]
            slots = [slot_of[label] for label in wanted]
            codes, scales = self._codes[slots], self._scales[slots]
        return wanted, (codes.astype(np.float32) @ query) * scales

    def compacted(self) -> AnnGraph:
        """A new graph of the live labels only (built aside; the caller swaps it in), from
        the graph's own float32 rows. ``get_items`` is slow (~18 us a row), so they are
        read :data:`COMPACT_READ_ROWS` at a time, letting queries in between; only the
        one writer removes labels, so none vanishes meanwhile."""
        labels = self.live_labels()
        rows = np.empty((len(labels), self._dimension), dtype=np.float32)
        for start in range(0, len(labels), COMPACT_READ_ROWS):
            chunk = labels[start : start + COMPACT_READ_ROWS]
            with self._lock:
                rows[start : start + len(chunk)] = self._graph.get_items(chunk)
        graph = AnnGraph(self._dimension, capacity=max(len(labels), 1))
        graph.add(np.array(labels, dtype=np.int64), rows)
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
        """Estimated bytes: each slot up to the capacity holds a float32 vector, its
        level-0 links, label and lock; each live label a map entry; upper levels ~1/M."""
        slots = self._graph.get_max_elements()
        links0 = 2 * CONNECTIVITY * 4 + 4
        per_slot = 4 * self._dimension + links0 + 8 + 40 + 4 + 8
        count = self._graph.get_current_count()
        upper = count // CONNECTIVITY * (CONNECTIVITY * 4 + 4)
        own = self._codes.nbytes + self._scales.nbytes + 100 * len(self._slot_of)
        return slots * per_slot + count * LABEL_MAP_BYTES + upper + own

    def search(self, query: npt.NDArray[np.float32], limit: int) -> list[tuple[int, float]] | None:
        """The ``limit`` nearest live rows, ``(label, cosine)``, best first; ``None`` when
        the graph cannot answer (fewer reachable rows than asked): search exactly then."""
        k = min(limit, len(self))
        if k <= 0:
            return []
        if self.exact_only:
            return None
        with self._lock:
            self._graph.set_ef(max(EF_SEARCH, k))
            try:
                labels, distances = self._graph.knn_query(query, k=k)
            except RuntimeError:
                return None
        cosines = 1.0 - distances[0].astype(np.float64)  # as float(distance) would
        return list(zip(labels[0].tolist(), cosines.tolist(), strict=True))
