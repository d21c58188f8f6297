"""Load every recallable memory from the graph (recall replica start-up).

The graph store builds the memories with the same mapper the ingest side uses for the
change stream (``workers/graph/recallable.py``), so a replica that bootstraps after a
restart holds what a replica fed by the stream holds.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol

from turngraph.schemas.changes import MemoryRecord
from turngraph.schemas.shards import WorkspaceFilter
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.vectors import Vector

__all__ = ["MemorySource", "VectorSource", "all_memories", "stored_vectors"]


class MemorySource(Protocol):
    """What a replica needs of the graph store to bootstrap (a ``GraphStore`` is one)."""

    def recallable_memories(
        self, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[MemoryRecord]: ...


def all_memories(
    source: MemorySource, workspaces: WorkspaceFilter | None = None
) -> Iterator[Memory]:
    """The source's memories (with ``workspaces``: of those workspaces, and user-level)."""
    for record in source.recallable_memories(workspaces):
        yield Memory.from_record(record)


class VectorSource(Protocol):
    """Where the ingest workers stored vectors (``workers.graph.vectors.GraphVectors``)."""

    def stored(
        self, model: str, workspaces: WorkspaceFilter | None = None
    ) -> Iterable[tuple[str, Vector]]: ...


def stored_vectors(
    source: VectorSource, model: str, workspaces: WorkspaceFilter | None = None
) -> dict[str, Vector]:
    """Every stored vector of ``model`` (of ``workspaces``' turns), by memory id."""
    return dict(source.stored(model, workspaces))
