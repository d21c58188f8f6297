"""What the recall replicas learn about a written batch, as change-stream entries."""

from __future__ import annotations

from schemas.changes import ChangeEntry, MemoryStatus, MemoryUpsert, StatusChange
from workers.graph.store import WriteReport


def changes_for(report: WriteReport) -> list[ChangeEntry]:
    """An upsert per memory the batch made or touched (as the graph now holds it, built
    by the graph store's mapper), then the decisions the batch superseded."""
    entries: list[ChangeEntry] = [MemoryUpsert(memory=memory) for memory in report.memories]
    entries.extend(
        StatusChange(memory_id=old_uid, status=MemoryStatus.SUPERSEDED.value)
        for old_uid, _ in report.superseded
    )
    return entries
