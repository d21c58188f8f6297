"""The bridge's distilled-memory ops: what an editor sends and gets back.

``summarize``, ``recap``, ``summary``, ``promote`` and ``context``: raw scope keys (hashed
by the bridge), an ``id`` echoed in the reply; an op answered by a maintenance worker
waits at most ``deadline_ms`` (clamped to ``MIN_DISTILL_DEADLINE_MS``..
``MAX_DISTILL_DEADLINE_MS`` and reported) and fails open with ``DEADLINE_EXCEEDED``.
docs/distill.md ("On demand").
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, Field

from turngraph.schemas.bridge_common import ClampedOptions, OpRequest, RawKey, SuccessReply
from turngraph.schemas.distill import DEFAULT_DISTILL_DEADLINE_MS
from turngraph.schemas.memories import MAX_MEMORY_CHARS, PromotedMemory
from turngraph.schemas.recall import ConversationTurn
from turngraph.schemas.recap import ContextTurn, SessionRecap
from turngraph.schemas.scopes import PromotionScope
from turngraph.schemas.summaries import ConversationSummary, DecisionRecord

__all__ = [
    "DISTILL_REPLY_MODELS", "MAX_DISTILL_DEADLINE_MS", "MIN_DISTILL_DEADLINE_MS", "ContextReply",
    "ContextRequest", "MemoryId", "PromotableKind", "PromoteReply", "PromoteRequest", "RecapReply",
    "RecapRequest", "SummarizeReply", "SummarizeRequest", "SummaryReply", "SummaryRequest",
]  # fmt: skip

MIN_DISTILL_DEADLINE_MS = 100
MAX_DISTILL_DEADLINE_MS = 120_000
"""A distill op's ``deadline_ms`` outside this range is clamped and named in ``clamped``."""

PromotableKind = Literal[
    "decision", "lesson_learned", "preference", "procedure", "task_update", "terminology"
]
"""What a person may promote (``schemas.memories.PROMOTABLE``)."""

MemoryId = Annotated[
    str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$", description="A recall result's `memory_id`.")
]


def _deadline() -> int | None:
    return Field(
        default=None,
        description=f"How long to wait for a maintenance worker (default "
        f"{DEFAULT_DISTILL_DEADLINE_MS}); out of range ({MIN_DISTILL_DEADLINE_MS}.."
        f"{MAX_DISTILL_DEADLINE_MS}) it is clamped and named in `clamped`.",
        json_schema_extra={
            "x-clamped-to": {"minimum": MIN_DISTILL_DEADLINE_MS, "maximum": MAX_DISTILL_DEADLINE_MS}
        },
    )


class SummarizeRequest(OpRequest):
    """Op ``summarize``: summarize and store the session's last ``last_n`` turns (Final)."""

    op: Literal["summarize"]
    session_id: RawKey
    last_n: int = Field(default=10, ge=1, le=500, description="How many recent turns.")
    deadline_ms: int | None = _deadline()


class RecapRequest(OpRequest):
    """Op ``recap``: a recap of a session within ``budget_tokens``; without ``session_id``
    the previous session of ``workspace`` (the latest one other than
    ``current_session_id``)."""

    op: Literal["recap"]
    workspace: RawKey
    session_id: RawKey | None = Field(
        default=None, description="The session to recap; default: the previous session."
    )
    current_session_id: RawKey | None = Field(
        default=None, description="The session in progress: never taken as the previous one."
    )
    budget_tokens: int = Field(default=1_000, ge=100, le=20_000)
    deadline_ms: int | None = _deadline()


class SummaryRequest(OpRequest):
    """Op ``summary``: the full stored summary, decision record or memory behind a recall
    result's ``memory_id`` (the seed's "show the full summary")."""

    op: Literal["summary"]
    memory_id: MemoryId
    deadline_ms: int | None = _deadline()


class PromoteRequest(OpRequest):
    """Op ``promote``: keep ``text`` as a curated memory of ``kind`` in the workspace or the
    user scope. Needs consent for the workspace; refused (``REFUSED``) when the text looks
    like a secret (the redaction rules). Provenance: ``source_event_ids``, else the
    session's latest turn."""

    op: Literal["promote"]
    kind: PromotableKind
    text: str = Field(min_length=1, max_length=MAX_MEMORY_CHARS)
    workspace: RawKey
    user: RawKey
    session_id: RawKey = Field(description="The chat the memory comes from.")
    scope: PromotionScope = "workspace"
    source_event_ids: tuple[Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")], ...] = Field(
        default=(), max_length=50, description="The turns it comes from (event ids)."
    )
    deadline_ms: int | None = _deadline()


class ContextRequest(OpRequest):
    """Op ``context``: the session's rolling context (last turns verbatim plus a rolling
    summary of older ones, about 1,100 tokens), as maintenance keeps it."""

    op: Literal["context"]
    session_id: RawKey


class SummarizeReply(SuccessReply):
    text: str = Field(description="The summary in the seed's text form.")
    summary: ConversationSummary
    clamped: ClampedOptions = None


class RecapReply(SuccessReply):
    session_id: str = Field(description="The (hashed) session recapped.")
    text: str
    recap: SessionRecap
    clamped: ClampedOptions = None


class SummaryReply(SuccessReply):
    kind: Literal["summary", "decision_record", "memory"]
    text: str = Field(description="The full stored text.")
    summary: ConversationSummary | None = None
    record: DecisionRecord | None = None
    clamped: ClampedOptions = None


class PromoteReply(SuccessReply):
    text: str
    memory: PromotedMemory
    clamped: ClampedOptions = None


class ContextReply(SuccessReply):
    available: bool = Field(description="False until maintenance has seen the session.")
    conversation_context: list[ConversationTurn] = Field(
        default_factory=list,
        description="Ready to send as a recall request's `conversation_context`: the rolling "
        "summary first (role system), then the last turns.",
    )
    summary: str = Field(default="", description="Rolling summary (at most 200 words).")
    summarized_through: int = -1
    recent: list[ContextTurn] = Field(default_factory=list)
    tokens: int = 0
    updated_at: AwareDatetime | None = None


DISTILL_REPLY_MODELS: dict[str, type[BaseModel]] = {
    "summarize": SummarizeReply,
    "recap": RecapReply,
    "summary": SummaryReply,
    "promote": PromoteReply,
    "context": ContextReply,
}
"""Op name -> success reply model of the distill ops."""
