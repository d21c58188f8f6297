"""What the recall replicas learn about a written batch, as change-stream entries."""

from __future__ import annotations

from collections.abc import Mapping

from turngraph.schemas.changes import (
    ChangeEntry,
    Embedding,
    MemoryStatus,
    MemoryUpsert,
    StatusChange,
)
from turngraph.workers.graph.store import WriteReport

__all__ = ["changes_for"]


def changes_for(
    report: WriteReport, embeddings: Mapping[str, Embedding] | None = None
) -> list[ChangeEntry]:
    """An upsert per memory the batch made or touched (as the graph now holds it, built
    by the graph store's mapper, with its vector when the ingest worker embedded it),
    then the decisions the batch superseded."""
    vectors = embeddings or {}
    entries: list[ChangeEntry] = [
        MemoryUpsert(memory=memory, embedding=vectors.get(memory.id)) for memory in report.memories
    ]
    entries.extend(
        StatusChange(memory_id=old_uid, status=MemoryStatus.SUPERSEDED.value)
        for old_uid, _ in report.superseded
    )
    return entries
