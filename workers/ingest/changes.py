"""What the recall workers learn about a written batch, as change-stream entries."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

from schemas.ontology import DIRECTIVES
from schemas.turn_event import TurnEvent
from workers.extraction.models import Extraction
from workers.graph.keys import entity_uid, normalise_name
from workers.graph.writer import WriteReport, entity_scope
from workers.recall.memory import Change, Memory, MemoryKind

RECALLABLE_ENTITY_TYPES = DIRECTIVES
"""Entity types that are memories in their own right, recalled beside the turns."""


def episode_memory(event: TurnEvent, extraction: Extraction) -> Memory:
    return Memory(
        id=event.event_id,
        text=event.content,
        kind=MemoryKind.EPISODE,
        scope="session",
        created_at=event.occurred_at,
        source_created_at=event.occurred_at,
        source_event_ids=(event.event_id,),
        session_id=event.session_id,
        workspace=event.workspace,
        user=event.user,
        entities=tuple(entity.name for entity in extraction.entities),
        turn_index=event.turn_index,
        extra={"role": event.role.value},
    )


def decision_memories(event: TurnEvent, extraction: Extraction) -> list[Memory]:
    """Decisions and memory directives become workspace (or user) level memories."""
    memories = []
    for entity in extraction.entities:
        if entity.type not in RECALLABLE_ENTITY_TYPES:
            continue
        scope, scope_key = entity_scope(entity, event)
        user_level = scope == "user"
        memories.append(
            Memory(
                id=entity_uid(scope_key, entity.type, normalise_name(entity.type, entity.name)),
                text=entity.summary or entity.name,
                kind=MemoryKind.FACT if entity.type == "Decision" else MemoryKind.PROMOTED,
                scope="user" if user_level else "workspace",
                created_at=datetime.now(UTC),
                source_created_at=event.occurred_at,
                source_event_ids=(event.event_id,),
                session_id=event.session_id,
                workspace=None if user_level else event.workspace,
                user=event.user,
                topic=(entity.attributes.get("subject") or entity.type).rstrip(".,;:!?"),
                entities=tuple(e.name for e in extraction.entities if e is not entity),
                extra={"entity_type": entity.type},
            )
        )
    return memories


def changes_for(
    batch: Sequence[tuple[TurnEvent, Extraction]], report: WriteReport
) -> list[dict[str, str]]:
    entries: list[dict[str, str]] = []
    for event, extraction in batch:
        entries.append(episode_memory(event, extraction).to_change())
        entries.extend(memory.to_change() for memory in decision_memories(event, extraction))
    entries.extend(
        Change.set_status(old_uid, "Superseded").to_fields() for old_uid, _ in report.superseded
    )
    return entries
