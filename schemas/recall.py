"""Recall wire contract: RecallRequest in, RecallResponse out (the seed bridge's shape)."""

from __future__ import annotations

import uuid
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from turngraph.schemas.bridge_common import WorkerReply
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.scopes import ScopeName, ScopeValue

__all__ = [
    "CLAMPED_RECALL_OPTIONS", "DEFAULT_DEADLINE_MS", "MAX_QUERY_CHARS", "RECALL_SCHEMA_VERSION",
    "ConversationTurn", "RecallRequest", "RecallResponse", "RecallResult", "ScoreBreakdown",
    "clamp_option", "query_of_prompt",
]  # fmt: skip

RECALL_SCHEMA_VERSION: Literal[1] = 1
"""Bumped on any incompatible change of the recall models."""

DEFAULT_DEADLINE_MS = 750
"""How long a client waits for an answer before it fails open."""


CLAMPED_RECALL_OPTIONS: dict[str, tuple[float, float | None]] = {
    "max_results": (1, 50),
    "max_tokens": (100, None),
    "half_life_days": (0.5, 90.0),
    "deadline_ms": (1, 60_000),
}
"""Recall options clamped into ``(low, high)`` (None: no upper bound) instead of rejected."""


def clamp_option(name: str, value: float) -> float:
    """``value`` moved into the range of option ``name``."""
    low, high = CLAMPED_RECALL_OPTIONS[name]
    value = max(low, value)
    return value if high is None else min(high, value)


MAX_QUERY_CHARS = 4_000
"""The longest query a recall request takes (a longer one is refused, naming ``query``)."""

_QUERY_JOIN = " … "


def query_of_prompt(prompt: str) -> str:
    """A prompt as a recall query: itself, or for a prompt longer than
    :data:`MAX_QUERY_CHARS` (a pasted log, a file, a diff, with the question before or
    after it) its beginning and its end, cut between words and joined by " … "."""
    prompt = prompt.strip()
    if len(prompt) <= MAX_QUERY_CHARS:
        return prompt
    half = (MAX_QUERY_CHARS - len(_QUERY_JOIN)) // 2
    head = prompt[:half].rsplit(None, 1)[0]  # a part without whitespace is kept whole
    tail = prompt[-half:].split(None, 1)[-1]
    return f"{head}{_QUERY_JOIN}{tail}"


class ConversationTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    role: Literal["user", "assistant", "system", "tool"]
    content: str = Field(max_length=20_000)


class RecallRequest(BaseModel):
    """A search request pushed by a client; ``reply_to`` is the per-request reply key."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    schema_version: Literal[1] = RECALL_SCHEMA_VERSION
    request_id: str = Field(
        default_factory=lambda: uuid.uuid4().hex, pattern=r"^[A-Za-z0-9_-]{1,128}$"
    )
    reply_to: str = Field(default="", max_length=256)
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    session_id: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$")
    workspace: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$")
    user: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]{1,128}$")
    scopes: tuple[ScopeName, ...] = (ScopeName.AUTO,)
    conversation_context: tuple[ConversationTurn, ...] = Field(default=(), max_length=20)
    window_from_turn: int | None = Field(
        default=None,
        ge=0,
        exclude_if=lambda value: value is None,  # a recall worker older than it refuses it
        description="The current session's turns from this turn index on are in the "
        "client's window (an editor's transcript since its last compaction): recall leaves "
        "them out, with the session's own summaries. None: only the turns of "
        "conversation_context are taken as in the window.",
    )
    max_results: int = 5
    max_tokens: int = 1_000
    half_life_days: float = 14.0
    include_superseded: bool = False
    deadline_ms: int = Field(default=DEFAULT_DEADLINE_MS, ge=1, le=60_000)
    sent_at_ms: int | None = Field(default=None, ge=0)

    @field_validator("max_results", mode="after")
    @classmethod
    def _clamp_results(cls, value: int) -> int:
        return int(clamp_option("max_results", value))

    @field_validator("max_tokens", mode="after")
    @classmethod
    def _min_tokens(cls, value: int) -> int:
        return int(clamp_option("max_tokens", value))

    @field_validator("half_life_days", mode="after")
    @classmethod
    def _clamp_half_life(cls, value: float) -> float:
        return clamp_option("half_life_days", value)


class ScoreBreakdown(BaseModel):
    model_config = ConfigDict(extra="forbid")

    final_score: float
    semantic_score: float
    recency_multiplier: float
    status_multiplier: float
    lexical_score: float = 0.0
    graph_score: float = 0.0
    context_boost: float = 1.0
    speaker_multiplier: float = Field(
        default=1.0, description="Above 1 when the query names the person who said it."
    )
    scope_multiplier: float = 1.0
    role_multiplier: float = Field(
        default=1.0,
        description="Below 1 for an assistant turn when the question is about the user "
        "(first person singular).",
    )
    answer_multiplier: float = Field(
        default=1.0,
        description="For a question: above 1 for what settles it (a decision, confirmation "
        "or stated preference), below 1 for a turn that only asks.",
    )


class RecallResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str
    kind: str = "episode"
    topic: str | None = None
    status: str = "Active"
    created_at: str
    source_created_at: str | None = None
    scope: ScopeValue
    score: ScoreBreakdown
    tokens: int
    source_event_ids: list[str] = Field(min_length=1)
    memory_id: str | None = Field(
        default=None,
        description="The memory's id: ask for the full stored summary or record with it "
        "(the bridge's `summary` op).",
    )


class RecallResponse(WorkerReply):
    model_config = ConfigDict(extra="forbid")

    schema_version: Literal[1] = RECALL_SCHEMA_VERSION
    request_id: str
    success: bool
    results: list[RecallResult] = Field(default_factory=list)
    result_count: int = 0
    total_tokens: int = 0
    took_ms: float = 0.0
    degraded: list[str] = Field(default_factory=list)
    memory_block: str = Field(
        default="",
        description="The results rendered as a <memory> block, ready to put in a prompt "
        "and framed as optional background context; empty when there are no results.",
    )
    error_code: ErrorCode | None = None
    user_message: str | None = None
    remediation: str | None = None
