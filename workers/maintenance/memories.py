"""Distilled items as recall memories, and their change-stream entries.

A summary, decision record, promoted memory or recap becomes one
:class:`~schemas.changes.MemoryRecord` whose text is a short digest (the full stored
summary is one request away, by the memory's id). Its JSON is also stored on the graph
node (``memory`` property): the graph store's bootstrap read
(``workers.graph.recallable.distilled_memory``) returns that very record, with the node's
current ``status``, so a replica that bootstraps holds what the stream gave the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime

from turngraph.schemas.changes import (
    MemoryKind,
    MemoryRecord,
    MemoryUpsert,
    StatusChange,
    encode_change,
)
from turngraph.schemas.memory_block import Said
from turngraph.schemas.scopes import Scope
from turngraph.schemas.summaries import ConversationSummary, DecisionRecord

__all__ = [
    "DECISION_RECORD_STATUS", "decision_record_memory", "record_digest", "status_changes",
    "summary_digest", "summary_memory", "upserts",
]  # fmt: skip

DECISION_RECORD_STATUS = "DecisionRecord"
"""The recall status of a decision record: the bridge seed's status with multiplier 1.1."""


def _joined(items: Sequence[str]) -> str:
    return "; ".join(item.rstrip(".") for item in items)


def summary_digest(summary: ConversationSummary) -> str:
    """What recall returns for a summary: its decisions, why, and what is open, in a few
    lines (the seed: synthesise, offer the full summary on request)."""
    c = summary.content
    lines = [f"Summary · {c.topic}: {_joined(c.context[:1])}."]
    if c.decisions:
        lines.append(f"Decided: {_joined(c.decisions)}.")
    if c.rationale:
        lines.append(f"Why: {_joined(c.rationale)}.")
    if c.open_questions:
        lines.append(f"Open: {_joined(c.open_questions)}")
    if c.next_steps:
        lines.append(f"Next: {_joined(c.next_steps)}.")
    return _once(lines)


def _once(lines: Sequence[str]) -> str:
    """``lines`` without those that only repeat an earlier one (a "Why" that says the
    decision again, a decision that is the title): each fact once (``Said``)."""
    said = Said()
    kept: list[str] = []
    for line in lines:
        if kept and said.repeats(line):
            continue
        said.add(line)
        kept.append(line)
    return "\n".join(kept)


def record_digest(record: DecisionRecord) -> str:
    """What recall returns for a decision record: the current decision first, its history,
    the reasons, what is still open."""
    lines = [f"Decision record · {record.topic}: {record.current_decision or 'no decision yet'}."]
    earlier = [d for d in record.decisions if d != record.current_decision]
    if earlier:
        lines.append(f"Before: {_joined(earlier)}.")
    if record.rationale:
        lines.append(f"Why: {_joined(record.rationale)}.")
    if record.open_questions:
        lines.append(f"Open: {_joined(record.open_questions)}")
    return _once(lines)


def _entities(*groups: Iterable[str]) -> tuple[str, ...]:
    """Display names, de-duplicated and sorted (the wire form is stable)."""
    return tuple(sorted({name for group in groups for name in group if name}))


def summary_memory(summary: ConversationSummary) -> MemoryRecord:
    refs = summary.references
    return MemoryRecord(
        id=summary.id,
        text=summary_digest(summary),
        kind=MemoryKind.SUMMARY,
        scope=Scope.WORKSPACE,
        created_at=summary.created_at,
        source_created_at=summary.time_scope.session_end,
        source_event_ids=summary.source_event_ids,
        session_id=summary.session_id,
        workspace=summary.workspace,
        user=summary.user,
        status=summary.status.value,
        topic=summary.content.topic,
        entities=_entities(summary.entities, refs.files, refs.plans, refs.branches, refs.issues),
        extra={"topic_id": summary.topic_id, "method": summary.method.value},
    )


def decision_record_memory(record: DecisionRecord, created_at: datetime) -> MemoryRecord:
    refs = record.references
    # Decision turns first: they are the provenance a reader follows first.
    provenance = tuple(dict.fromkeys([*record.decision_event_ids, *record.source_event_ids]))
    return MemoryRecord(
        id=record.id,
        text=record_digest(record),
        kind=MemoryKind.DECISION_RECORD,
        scope=Scope.WORKSPACE,
        created_at=created_at,
        source_created_at=record.time_scope.session_end,
        source_event_ids=provenance,
        workspace=record.workspace,
        user=record.user,
        status=DECISION_RECORD_STATUS,
        topic=record.topic,
        entities=_entities(record.entities, refs.files, refs.plans, refs.branches, refs.issues),
        extra={"topic_id": record.topic_id},
    )


def upserts(memories: Sequence[MemoryRecord]) -> list[dict[str, str]]:
    """Change-stream fields of upserts (``schemas.changes``)."""
    return [encode_change(MemoryUpsert(memory=memory)) for memory in memories]


def status_changes(memory_ids: Iterable[str], status: str) -> list[dict[str, str]]:
    return [
        encode_change(StatusChange(memory_id=memory_id, status=status)) for memory_id in memory_ids
    ]
