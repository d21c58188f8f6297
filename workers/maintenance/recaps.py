"""A session's recap made from the graph and kept as its ``recap`` memory (a recall kind:
the seed keeps recaps out of semantic memory; here they are one memory per session,
replaced by each new recap, so "what was I doing" finds it and nothing else piles up)."""

from __future__ import annotations

from turngraph.schemas.changes import MemoryKind, MemoryRecord
from turngraph.schemas.recap import SessionRecap
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.batch_plan import iso
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.memories import upserts
from turngraph.workers.maintenance.recap import build_recap

__all__ = ["recap_memory", "recap_session", "recap_uid"]


def recap_uid(session_id: str) -> str:
    return f"recap_{session_id}"


def recap_memory(recap: SessionRecap) -> MemoryRecord:
    provenance = tuple(dict.fromkeys(e for s in recap.sections for e in s.source_event_ids))
    return MemoryRecord(
        id=recap_uid(recap.session_id),
        text=recap.text,
        kind=MemoryKind.RECAP,
        scope=Scope.SESSION,
        created_at=recap.session_end,
        source_event_ids=provenance,
        session_id=recap.session_id,
        workspace=recap.workspace,
        user=recap.user,
        topic="session recap",
        extra={"budget_tokens": str(recap.budget_tokens)},
    )


def recap_session(
    distiller: Distiller, session_id: str, budget_tokens: int, *, store: bool = True
) -> SessionRecap | None:
    """The session's recap within ``budget_tokens`` (None: no turns), stored unless asked
    not to."""
    turns = distiller.store.session_turns(session_id)
    if not turns:
        return None
    recap = build_recap(turns, budget_tokens, session_id)
    if store:
        memory = recap_memory(recap)
        row = {
            "uid": memory.id,
            "created_at": iso(distiller.now()),
            "kind": MemoryKind.RECAP.value,
            "status": "Active",
            "scope": "session",
            "scope_key": recap.workspace,
            "session_id": session_id,
            "workspace": recap.workspace,
            "user": recap.user,
            "topic": "session recap",
            "text": recap.text,
            "memory": memory.model_dump_json(),
            "source_event_ids": list(memory.source_event_ids[-50:]),
        }
        distiller.store.upsert_recap(row)
        distiller.announce(upserts([memory]))
    return recap
