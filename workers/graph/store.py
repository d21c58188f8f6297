"""The graph-store boundary: what the ingest pipeline, forget and recall need of a graph.

:class:`~workers.graph.bolt_store.BoltGraphStore` (Neo4j 5 or the embedded ArcadeDB) and
the tests' ``InMemoryGraphStore`` pass the same contract tests
(``tests/contract/test_graph_store.py``). A store raises only :mod:`schemas.errors`
types: a ``TransientError`` (``BackendUnavailableError``) when the server is unreachable
or busy, a ``PermanentError`` when the request cannot succeed.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from turngraph.schemas.changes import MemoryRecord
from turngraph.schemas.scopes import Scope
from turngraph.schemas.shards import WorkspaceFilter
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.models import Extraction
from turngraph.workers.graph.subgraph import Subgraph

__all__ = ["Batch", "GraphStore", "ScopeDeletion", "WriteReport"]

Batch = Sequence[tuple[TurnEvent, Extraction]]
"""Redacted turns with their extractions, written in one transaction."""


@dataclass
class WriteReport:
    """What one batch write did. ``memories`` are the recallable memories the batch made or
    touched, as the graph holds them after the write (for the change stream)."""

    episodes: int = 0
    entities: int = 0
    facts: int = 0
    dropped: int = 0
    superseded: list[tuple[str, str]] = field(default_factory=list)
    """(superseded uid, superseding uid) pairs."""
    created: list[str] = field(default_factory=list)
    """Event ids whose Episode this write created (not found already written): the
    ingest pipeline counts them per event, so a turn written twice shows."""
    memories: list[MemoryRecord] = field(default_factory=list)
    previous_texts: dict[str, str] | None = None
    """Each written turn's previous turn (``speaker_text``), by event id, for the turns
    whose previous turn the graph holds, read in the write's transaction; None when the
    store was not asked to (no embedding model) or does not read them."""


@dataclass
class ScopeDeletion:
    """What deleting a scope from the graph did."""

    nodes_deleted: int = 0
    entities_pruned: int = 0
    event_ids: list[str] = field(default_factory=list)
    """The forgotten turns (their Redis markers and jobs are deleted by the caller)."""
    memories: list[MemoryRecord] = field(default_factory=list)
    """Directive memories outside the scope that the deletion changed (provenance pruned,
    Active again), as they now are: recall replicas replace theirs."""
    removed_memory_ids: list[str] = field(default_factory=list)
    """Directive memories the deletion removed (only forgotten turns stated them)."""


class GraphStore(Protocol):
    """Write a batch, read a scope, delete a scope, and page through recallable memories."""

    def write(self, batch: Batch) -> WriteReport:
        """Write the batch in one transaction; idempotent on ``event_id`` (re-delivery
        changes nothing), mentions counted once, decisions on a subject superseded."""
        ...

    def read_scope(self, scope: Scope, key: str) -> Subgraph:
        """The scope's own nodes, what its episodes mention, the workspaces its sessions
        are in, and the relationships among them."""
        ...

    def delete_scope(self, scope: Scope, key: str) -> ScopeDeletion:
        """Delete the scope's own nodes and the provenance its turns gave elsewhere."""
        ...

    def recallable_memories(
        self, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[MemoryRecord]:
        """Every recallable memory (recall replica bootstrap), episodes first; with
        ``workspaces``, only the episodes of the workspaces it accepts, read workspace by
        workspace (in sorted order), then every directive and distilled memory (few;
        the replica keeps its own)."""
        ...
