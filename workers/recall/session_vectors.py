"""A session's own vector: the mean of its user's first turns' vectors (issue 37).

An opening turn says what the user sets out to do ("I want to start X"); a question
asked in a later session is about the details its first turns went on to discuss, which
the opening turn's own vector does not hold. The mean of the vectors of the user's turns
up to ``Ranking.session_reach`` stands for the session, so the semantic stage can choose
sessions: the sessions nearest the query lend their opening turn as a candidate (the
signal ``session_vector``, :func:`session_vector_signal`), as the lexical session signal
lends the openers of the sessions whose first turns match the query's words.

Made in the replica from the vectors it already holds: no ingest change, nothing on the
wire. One int8 row per session of a workspace partition (as ``vectors`` holds a memory's),
recomputed from the stored vectors of its turns whenever one of those is stored or
removed (at most ``session_reach + 1`` rows gathered, and only for a session's first
turns); searched exactly (a workspace has one row per session). docs/recall.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from turngraph.workers.recall.vectors import Vector, quantise

__all__ = ["INITIAL_ROWS", "SessionVectors", "mean_vector"]

INITIAL_ROWS = 64


def mean_vector(vectors: Sequence[Vector]) -> Vector | None:
    """The unit mean of unit vectors (``None`` for none, or when they cancel out)."""
    if not vectors:
        return None
    total = np.sum(np.asarray(vectors, dtype=np.float32), axis=0)
    norm = float(np.linalg.norm(total))
    return (total / norm).astype(np.float32) if norm > 1e-6 else None


@dataclass(slots=True)
class _Table:
    """One partition's session rows; a removed session's row gets scale 0 and is reused."""

    dimension: int
    codes: npt.NDArray[np.int8] = field(init=False)
    scales: npt.NDArray[np.float32] = field(init=False)
    sessions: list[str | None] = field(default_factory=list)
    row_of: dict[str, int] = field(default_factory=dict)
    free: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.codes = np.zeros((INITIAL_ROWS, self.dimension), dtype=np.int8)
        self.scales = np.zeros(INITIAL_ROWS, dtype=np.float32)

    def put(self, session: str, vector: Vector) -> None:
        row = self.row_of.get(session)
        if row is None:
            row = self.free.pop() if self.free else len(self.sessions)
            if row == len(self.sessions):
                self.sessions.append(session)
            else:
                self.sessions[row] = session
            if row >= len(self.scales):
                self._grow()
            self.row_of[session] = row
        codes, scale = quantise(vector)
        self.codes[row] = codes
        self.scales[row] = scale

    def drop(self, session: str) -> None:
        row = self.row_of.pop(session, None)
        if row is None:
            return
        self.scales[row] = 0.0
        self.sessions[row] = None
        self.free.append(row)

    def _grow(self) -> None:
        size = len(self.scales)
        codes = np.zeros((size * 2, self.dimension), dtype=np.int8)
        scales = np.zeros(size * 2, dtype=np.float32)
        codes[:size], scales[:size] = self.codes, self.scales
        self.codes, self.scales = codes, scales  # a reader keeps the arrays it took

    def nearest(self, query: Vector, limit: int) -> list[tuple[str, float]]:
        codes, scales, sessions = self.codes, self.scales, self.sessions
        size = min(len(sessions), len(scales))
        if size == 0 or limit <= 0:
            return []
        sims = (codes[:size] @ query) * scales[:size]
        sims[scales[:size] == 0] = -np.inf
        rows = np.argpartition(-sims, limit)[:limit] if limit < size else np.arange(size)
        rows = rows[np.argsort(-sims[rows])]
        found = []
        for row in rows.tolist():
            session = sessions[row] if row < len(sessions) else None
            if session is not None and np.isfinite(sims[row]):
                found.append((session, float(sims[row])))
        return found


class SessionVectors:
    """Each session's vector, per partition (``PartitionKey``), keyed by session id."""

    def __init__(self, dimension: int) -> None:
        self.dimension = dimension
        self._tables: dict[tuple[str, str], _Table] = {}

    def __len__(self) -> int:
        return sum(len(t.row_of) for t in self._tables.values())

    def set(self, partition: tuple[str, str], session: str, vector: Vector | None) -> None:
        """Hold ``vector`` as the session's (``None``: it has none any more)."""
        table = self._tables.get(partition)
        if vector is None or vector.shape != (self.dimension,):
            if table is not None:
                table.drop(session)
            return
        if table is None:
            table = self._tables[partition] = _Table(self.dimension)
        table.put(session, vector)

    def forget(self, partition: tuple[str, str]) -> None:
        self._tables.pop(partition, None)

    def nearest(
        self, partition: tuple[str, str], query: Vector, limit: int
    ) -> list[tuple[str, float]]:
        """The ``limit`` sessions of a partition whose vectors are nearest ``query``:
        ``(session id, cosine)``, best first."""
        table = self._tables.get(partition)
        return table.nearest(query, limit) if table is not None else []

    def nbytes(self) -> int:
        return sum(
            t.codes.nbytes + t.scales.nbytes + 100 * len(t.row_of) for t in self._tables.values()
        )
