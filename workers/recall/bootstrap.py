"""Load every recallable memory from the graph (recall replica start-up).

The graph store builds the memories with the same mapper the ingest side uses for the
change stream (``workers/graph/recallable.py``), so a replica that bootstraps after a
restart holds what a replica fed by the stream holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

import numpy as np

from schemas.changes import MemoryRecord
from workers.recall.memory import Memory
from workers.recall.vectors import Vector


class MemorySource(Protocol):
    """What a replica needs of the graph store to bootstrap (a ``GraphStore`` is one)."""

    def recallable_memories(self) -> Iterator[MemoryRecord]: ...


def all_memories(source: MemorySource) -> Iterator[Memory]:
    for record in source.recallable_memories():
        yield Memory.from_record(record)


class VectorSource(Protocol):
    """Where the ingest workers stored vectors (``workers.graph.vectors.GraphVectors``)."""

    def stored(self, model: str) -> Iterable[tuple[str, list[float]]]: ...


def stored_vectors(source: VectorSource, model: str) -> dict[str, Vector]:
    """Every stored vector of ``model``, by memory id (float32 as it is read, so the
    lists of floats the driver returns never pile up)."""
    return {key: np.asarray(vector, dtype=np.float32) for key, vector in source.stored(model)}
