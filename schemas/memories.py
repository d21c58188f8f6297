"""Promoted memories: curated, longer-lived memories in a workspace or user scope
(``seeds/graphiti-memory-integration.md``: promotion, memory directives, ownership context).
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

from turngraph.schemas.scopes import ScopeValue

__all__ = [
    "MAX_MEMORY_CHARS", "MEMORY_SCHEMA_VERSION", "PROMOTABLE", "MemoryOrigin", "PromotedMemory",
    "PromotionKind", "render_memory",
]  # fmt: skip

MEMORY_SCHEMA_VERSION: Literal[1] = 1

MAX_MEMORY_CHARS = 2_000
"""Longest promoted text."""


class PromotionKind(StrEnum):
    """The kinds a memory can be promoted as (the seed's list), plus ownership context."""

    DECISION = "decision"
    LESSON_LEARNED = "lesson_learned"
    PREFERENCE = "preference"
    PROCEDURE = "procedure"
    TASK_UPDATE = "task_update"
    TERMINOLOGY = "terminology"
    OWNERSHIP_CONTEXT = "ownership_context"


PROMOTABLE = tuple(kind for kind in PromotionKind if kind is not PromotionKind.OWNERSHIP_CONTEXT)
"""What a person (or a memory directive) may promote."""


class MemoryOrigin(StrEnum):
    PROMOTION = "promotion"
    """Asked for explicitly (client API, bridge op)."""
    DIRECTIVE = "directive"
    """Auto-promoted from a memory directive in a user turn (opt-in)."""
    SYSTEM = "system"
    """Written by the system itself (ownership context)."""


class PromotedMemory(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = MEMORY_SCHEMA_VERSION
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")
    kind: PromotionKind
    scope: ScopeValue
    workspace: str | None = None
    user: str
    session_id: str | None = None
    text: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)
    origin: MemoryOrigin
    source_event_ids: tuple[str, ...] = Field(min_length=1)
    created_at: AwareDatetime

    @property
    def scope_key(self) -> str:
        """The key forget and export find it by: the user's for user memories, else the
        workspace's (a session memory lives in its workspace; ``session_id`` names it)."""
        return self.user if self.scope == "user" else (self.workspace or "")


def render_memory(memory: PromotedMemory) -> str:
    """The seed's episode block: ``<episode kind="preference">…</episode>``."""
    return f'<episode kind="{memory.kind.value}">{memory.text}</episode>'
