"""The stdio bridge's contract: what an editor sends to ``turngraph bridge`` and gets back.

Unlike the wire models (``TurnEvent``, ``RecallRequest``), requests carry **raw** scope
keys (the bridge hashes them), an optional ``occurred_at`` and an ``id`` echoed in the
reply. Requests are strict (a typo in an option is an error); out-of-range recall options
are clamped and reported in ``clamped`` (their range: ``x-clamped-to`` in the JSON
Schema). Exported to ``schemas/json/bridge_*``.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, Field, JsonValue

from turngraph.schemas.bridge_common import (
    MAX_FLUSH_TIMEOUT_S,
    MAX_RAW_KEY_CHARS,
    REQUEST_CONFIG,
    Clamped,
    ClampedOptions,
    ErrorReply,
    OpRequest,
    RawKey,
    RequestId,
    SuccessReply,
)
from turngraph.schemas.bridge_distill import (
    DISTILL_REPLY_MODELS,
    ContextRequest,
    PromoteRequest,
    RecapRequest,
    SummarizeRequest,
    SummaryRequest,
)
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.recall import (
    CLAMPED_RECALL_OPTIONS,
    MAX_QUERY_CHARS,
    ConversationTurn,
    RecallResponse,
)
from turngraph.schemas.scopes import ScopeName
from turngraph.schemas.turn_event import (
    MAX_CONTENT_CHARS,
    MAX_TURN_INDEX,
    ClientInfo,
    GitInfo,
    Reference,
    Role,
)

SESSION_KEY = "The chat's id in the editor (or its s_ id); hashed by the bridge."
WORKSPACE_KEY = "The workspace folder's absolute path (or its w_ id); hashed by the bridge."
USER_KEY = "The user's name, e.g. the login name (or its u_ id); hashed by the bridge."


class BridgeTurn(BaseModel):
    """A finished turn as an editor sends it: ``TurnEvent`` with raw scope keys."""

    model_config = REQUEST_CONFIG

    event_id: str = Field(
        default="",
        pattern=r"^([A-Za-z0-9_-]{1,128})?$",
        description="Idempotency key; default: a stable hash of session, turn index and role.",
    )
    session_id: RawKey = Field(description=SESSION_KEY)
    workspace: RawKey = Field(description=WORKSPACE_KEY)
    user: RawKey = Field(description=USER_KEY)
    turn_index: int = Field(ge=0, le=MAX_TURN_INDEX)
    role: Role
    speaker: str = Field(default="", max_length=100)
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    occurred_at: AwareDatetime | None = Field(
        default=None, description="ISO 8601 with a timezone; default: when the bridge reads it."
    )
    client: ClientInfo
    git: GitInfo | None = None
    references: tuple[Reference, ...] = Field(default=(), max_length=100)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    tags: tuple[str, ...] = Field(default=(), max_length=50)


class PublishRequest(OpRequest):
    """Op ``publish``: validate, hash, check consent, buffer (fire-and-forget)."""

    op: Literal["publish"]
    event: BridgeTurn


def _clamped(option: str, description: str) -> Any:
    low, high = CLAMPED_RECALL_OPTIONS[option]
    bounds: dict[str, JsonValue] = {"minimum": low}
    if high is not None:
        bounds["maximum"] = high
    to = f"{low}..{high}" if high is not None else f">= {low}"
    return Field(
        default=None,
        description=f"{description} Out of range ({to}) it is clamped and named in `clamped`.",
        json_schema_extra={"x-clamped-to": bounds},
    )


class RecallBridgeRequest(OpRequest):
    """Op ``recall``: search the memory; answers within ``deadline_ms`` (fails open)."""

    op: Literal["recall"]
    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    session_id: RawKey | None = Field(default=None, description=SESSION_KEY)
    workspace: RawKey | None = Field(default=None, description=WORKSPACE_KEY)
    user: RawKey | None = Field(default=None, description=USER_KEY)
    scopes: tuple[ScopeName, ...] | None = None
    conversation_context: tuple[ConversationTurn, ...] | None = Field(default=None, max_length=20)
    max_results: int | None = _clamped("max_results", "Results wanted (default 5).")
    max_tokens: int | None = _clamped("max_tokens", "Token budget of the results (default 1000).")
    half_life_days: float | None = _clamped("half_life_days", "Recency half-life (default 14).")
    include_superseded: bool | None = None
    deadline_ms: int | None = _clamped("deadline_ms", "How long to wait (default 750).")


class FlushRequest(OpRequest):
    """Op ``flush``: wait (bounded) until buffered events are taken by Redis."""

    op: Literal["flush"]
    timeout_s: float = Field(
        default=2.0,
        ge=0,
        description=f"Seconds to wait; above {MAX_FLUSH_TIMEOUT_S:g} it is clamped and "
        "named in `clamped`.",
        json_schema_extra={"x-clamped-to": {"minimum": 0, "maximum": MAX_FLUSH_TIMEOUT_S}},
    )


class StatusRequest(OpRequest):
    """Op ``status``: this bridge's counters and the shared queue's."""

    op: Literal["status"]


BridgeRequest = Annotated[
    PublishRequest
    | RecallBridgeRequest
    | FlushRequest
    | StatusRequest
    | SummarizeRequest
    | RecapRequest
    | SummaryRequest
    | PromoteRequest
    | ContextRequest,
    Field(discriminator="op"),
]
"""One request line."""

REQUEST_MODELS: dict[str, type[BaseModel]] = {
    "publish": PublishRequest,
    "recall": RecallBridgeRequest,
    "flush": FlushRequest,
    "status": StatusRequest,
    "summarize": SummarizeRequest,
    "recap": RecapRequest,
    "summary": SummaryRequest,
    "promote": PromoteRequest,
    "context": ContextRequest,
}
"""Op name -> request model (the distill ops' are in ``schemas.bridge_distill``)."""


class PublishReply(SuccessReply):
    event_id: str
    buffered: bool = Field(description="False when this bridge's local buffer was full.")
    dropped: Literal["local_buffer_full"] | None = None


class RecallReply(RecallResponse):
    """A RecallResponse (success, or a fail-open failure with ``degraded``), plus ``id``."""

    id: RequestId | None = None
    clamped: ClampedOptions = None


class FlushReply(SuccessReply):
    pending: Literal[0] = 0
    clamped: ClampedOptions = None


class StatusReply(SuccessReply):
    endpoint: str = Field(description="What consent is tied to (no credentials).")
    redis_available: bool = Field(
        description="Redis answered PING within the status deadline (0.5 s), just now."
    )
    recall_replicas: int | None = Field(
        default=None,
        description="Recall replicas with a live heartbeat (0: recall cannot answer; null: "
        "not readable with this credential, or Redis not reachable).",
    )
    pending: int | None = Field(
        default=None, description="Turns this bridge holds that Redis has not answered yet."
    )
    publisher: dict[str, int] | None = Field(
        default=None, description="This bridge's publisher counters."
    )
    queue: dict[str, int] | None = Field(
        default=None, description="The shared ingest queue's counters."
    )
    degraded: list[str] | None = None


REPLY_MODELS: dict[str, tuple[type[BaseModel], ...]] = {
    "publish": (PublishReply, ErrorReply),
    "recall": (RecallReply, ErrorReply),
    "flush": (FlushReply, ErrorReply),
    "status": (StatusReply, ErrorReply),
    **{op: (model, ErrorReply) for op, model in DISTILL_REPLY_MODELS.items()},
}
"""Op name -> the reply models one of which answers it."""

__all__ = [
    "MAX_FLUSH_TIMEOUT_S", "MAX_RAW_KEY_CHARS", "BridgeRequest", "BridgeTurn", "Clamped",
    "ErrorCode", "ErrorReply", "FlushReply", "FlushRequest", "PublishReply", "PublishRequest",
    "RecallBridgeRequest", "RecallReply", "StatusReply", "StatusRequest",
]  # fmt: skip
