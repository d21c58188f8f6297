"""On-demand distill requests (client API, bridge ops) and their replies.

A client pushes a :class:`DistillRequest` on the asks inbox ``keys.DISTILL_REQUESTS``;
admission makes it a maintenance job (``workers/maintenance/asks.py``) that pushes a
:class:`DistillResponse` on the request's ``reply_to`` key. Like recall, the client waits
at most its deadline and fails open with the seed bridge's error contract.
"""

from __future__ import annotations

import uuid
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from turngraph.schemas.bridge_common import WorkerReply
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.memories import PromotedMemory, PromotionKind
from turngraph.schemas.recap import SessionRecap
from turngraph.schemas.scopes import PromotionScope
from turngraph.schemas.summaries import ConversationSummary, DecisionRecord

__all__ = [
    "DEFAULT_DISTILL_DEADLINE_MS", "DISTILL_SCHEMA_VERSION", "DistillOp", "DistillRequest",
    "DistillResponse",
]  # fmt: skip

DISTILL_SCHEMA_VERSION: Literal[1] = 1

DEFAULT_DISTILL_DEADLINE_MS = 30_000
"""On-demand work may call an LLM: clients wait longer than for recall."""

_ID = r"^[A-Za-z0-9_-]{1,128}$"


class DistillOp(StrEnum):
    SUMMARIZE = "summarize"
    """Summarize and store the session's last ``last_n`` turns (status Final)."""
    RECAP = "recap"
    """Recap the session within ``budget_tokens`` (kept as its recap memory); without
    ``session_id``, the previous session of ``workspace`` (the latest other than
    ``current_session_id``)."""
    SUMMARY = "summary"
    """The full stored summary, decision record or memory with id ``memory_id``."""
    COMPACT = "compact"
    """Compact the topic ``topic_id`` of ``workspace`` into its decision record now."""
    PROMOTE = "promote"
    """Keep ``text`` as a ``kind`` memory in the workspace or user scope."""


class DistillRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = DISTILL_SCHEMA_VERSION
    request_id: str = Field(default_factory=lambda: uuid.uuid4().hex, pattern=_ID)
    reply_to: str = Field(default="", max_length=256)
    op: DistillOp
    session_id: str | None = Field(default=None, pattern=_ID)
    workspace: str | None = Field(default=None, pattern=_ID)
    user: str | None = Field(default=None, pattern=_ID)
    current_session_id: str | None = Field(default=None, pattern=_ID)
    last_n: int = Field(default=10, ge=1, le=500)
    budget_tokens: int = Field(default=1_000, ge=100, le=20_000)
    memory_id: str | None = Field(default=None, pattern=_ID)
    topic_id: str | None = Field(default=None, min_length=1, max_length=120)
    kind: PromotionKind | None = None
    text: str | None = Field(default=None, min_length=1, max_length=2_000)
    scope: PromotionScope = "workspace"
    source_event_ids: tuple[str, ...] = Field(default=(), max_length=50)
    deadline_ms: int = Field(default=DEFAULT_DISTILL_DEADLINE_MS, ge=1, le=300_000)
    sent_at_ms: int | None = Field(default=None, ge=0)


class DistillResponse(WorkerReply):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = DISTILL_SCHEMA_VERSION
    request_id: str
    success: bool
    op: DistillOp | None = None
    text: str = ""
    """The result in the seed's text form (summary, record, recap or memory)."""
    summary: ConversationSummary | None = None
    record: DecisionRecord | None = None
    recap: SessionRecap | None = None
    memory: PromotedMemory | None = None
    error_code: ErrorCode | None = None
    user_message: str | None = None
    remediation: str | None = None
