"""Promotion: curated memories into a workspace or user scope.

``promote`` (a person asks), ``auto_promote_turn`` (opt-in: the memory directives of a
user turn; content that looks like a secret is refused) and ``ownership_context`` (once
per scope, no paths). Ids derive from scope, kind and text, so promoting twice writes one
memory. docs/distill.md ("Promotion").
"""

from __future__ import annotations

import hashlib
import unicodedata

import structlog

from turngraph.producers.redaction import looks_secret
from turngraph.schemas.changes import MemoryKind, MemoryRecord
from turngraph.schemas.errors import PermanentError
from turngraph.schemas.memories import MemoryOrigin, PromotedMemory, PromotionKind, render_memory
from turngraph.schemas.scopes import Scope
from turngraph.workers.extraction.directives import find_directives
from turngraph.workers.graph.batch_plan import iso
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.memories import upserts

__all__ = [
    "DIRECTIVE_KINDS", "PromotionScopeError", "SecretContentError", "auto_promote_turn",
    "memory_uid", "ownership_context", "promote", "recall_memory", "store_memory",
]  # fmt: skip

log = structlog.get_logger(__name__)

DIRECTIVE_KINDS: dict[str, PromotionKind] = {
    "Decision": PromotionKind.DECISION,
    "Preference": PromotionKind.PREFERENCE,
    "Terminology": PromotionKind.TERMINOLOGY,
    "LessonLearned": PromotionKind.LESSON_LEARNED,
    "Procedure": PromotionKind.PROCEDURE,
}
"""The directive's entity type (``workers.extraction.directives``) and the kind it
promotes as."""


class SecretContentError(PermanentError):
    """Refused: the content looks like a secret. The message never quotes it."""


class PromotionScopeError(PermanentError):
    """The scope asked for lacks its key (a workspace memory needs the workspace)."""


def memory_uid(scope: str, scope_key: str, kind: str, text: str) -> str:
    normal = " ".join(unicodedata.normalize("NFKC", text).casefold().split())
    digest = hashlib.sha256(f"{scope}\x1f{scope_key}\x1f{kind}\x1f{normal}".encode()).hexdigest()
    return f"mem_{digest[:32]}"


def recall_memory(memory: PromotedMemory) -> MemoryRecord:
    label = memory.kind.value.replace("_", " ")
    return MemoryRecord(
        id=memory.id,
        text=f"{label[:1].upper()}{label[1:]}: {memory.text}",
        kind=MemoryKind.PROMOTED,
        scope=Scope(memory.scope),
        created_at=memory.created_at,
        source_event_ids=memory.source_event_ids,
        session_id=memory.session_id,
        workspace=memory.workspace,
        user=memory.user,
        topic=label,
        extra={"memory_kind": memory.kind.value, "origin": memory.origin.value},
    )


def store_memory(distiller: Distiller, memory: PromotedMemory) -> bool:
    """Write the memory (once: its first ``created_at`` stays); True if it is new."""
    recalled = recall_memory(memory)
    row = {
        "uid": memory.id,
        "created_at": iso(memory.created_at),
        "kind": memory.kind.value,
        "status": "Active",
        "scope": memory.scope,
        "scope_key": memory.scope_key,
        "session_id": memory.session_id,
        "workspace": memory.workspace,
        "user": memory.user,
        "topic": memory.kind.value,
        "text": render_memory(memory),
        "memory": recalled.model_dump_json(),
        "source_event_ids": list(memory.source_event_ids),
    }
    existed = distiller.store.memory_exists(memory.id)
    distiller.store.upsert_memory(row)
    if not existed:
        distiller.announce(upserts([recalled]))
        log.info("memory_promoted", memory_id=memory.id, kind=memory.kind.value)
    return not existed


def promote(
    distiller: Distiller,
    *,
    kind: PromotionKind,
    text: str,
    scope: str,
    user: str,
    workspace: str | None,
    source_event_ids: tuple[str, ...],
    session_id: str | None = None,
    origin: MemoryOrigin = MemoryOrigin.PROMOTION,
) -> PromotedMemory:
    """Keep ``text`` as a ``kind`` memory in ``scope`` (workspace or user)."""
    if kind is PromotionKind.OWNERSHIP_CONTEXT:
        raise PromotionScopeError("ownership context is written by the system")
    if scope not in ("workspace", "user"):
        raise PromotionScopeError("promote into the workspace or the user scope")
    if scope == "workspace" and not workspace:
        raise PromotionScopeError("a workspace memory needs the workspace key")
    text = " ".join(text.split())
    if looks_secret(text):
        log.warning("promotion_refused_secret", kind=kind.value)
        raise SecretContentError("refused: the content looks like a secret")
    memory = PromotedMemory(
        id=memory_uid(scope, (workspace or "") if scope == "workspace" else user, kind.value, text),
        kind=kind,
        scope="user" if scope == "user" else "workspace",
        workspace=workspace if scope == "workspace" else None,
        user=user,
        session_id=session_id,
        text=text,
        origin=origin,
        source_event_ids=source_event_ids,
        created_at=distiller.now(),
    )
    store_memory(distiller, memory)
    return memory


def auto_promote_turn(distiller: Distiller, session_id: str, turn_index: int) -> dict[str, int]:
    """Promote the memory directives of one user turn; counts promoted and refused."""
    counts = {"promoted": 0, "refused_secret": 0}
    turns = distiller.store.session_turns(session_id, turn_index, turn_index)
    for turn in turns:
        if turn.role != "user":
            continue
        for statement in find_directives(turn.content):
            kind = DIRECTIVE_KINDS.get(statement.type)
            if kind is None or not statement.text.strip():
                continue
            scope = statement.attributes.get("scope", "workspace")
            try:
                promote(
                    distiller,
                    kind=kind,
                    text=statement.text,
                    scope=scope,
                    user=turn.user,
                    workspace=turn.workspace,
                    session_id=turn.session_id,
                    source_event_ids=(turn.event_id,),
                    origin=MemoryOrigin.DIRECTIVE,
                )
                counts["promoted"] += 1
            except SecretContentError:
                counts["refused_secret"] += 1
    return counts


def ownership_context(distiller: Distiller, session_id: str) -> int:
    """Once per scope (the session, its workspace): who owns it, and the git branch and
    commit of its first turn; never a path. Returns how many were new."""
    turns = distiller.store.session_turns(session_id, 0, 0)
    if not turns:
        return 0
    first = turns[0]
    git = f" Git: branch {first.git_branch}." if first.git_branch else ""
    written = 0
    for scope, key in (("session", session_id), ("workspace", first.workspace)):
        text = f"Owner {first.user} owns this {scope} scope ({scope} {key}).{git}"
        memory = PromotedMemory(
            id=f"own_{hashlib.sha256(f'{scope}|{key}'.encode()).hexdigest()[:32]}",
            kind=PromotionKind.OWNERSHIP_CONTEXT,
            scope="session" if scope == "session" else "workspace",
            workspace=first.workspace,
            user=first.user,
            session_id=session_id if scope == "session" else None,
            text=text,
            origin=MemoryOrigin.SYSTEM,
            source_event_ids=(first.event_id,),
            created_at=distiller.now(),
        )
        written += store_memory(distiller, memory)
    return written
