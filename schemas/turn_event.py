"""TurnEvent: one finished chat turn, as a producer publishes it."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from enum import Enum
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, field_validator, model_validator

from turngraph.schemas.validation import rule_error

__all__ = [
    "EARLIEST_OCCURRED_AT", "ID_PATTERN", "LATEST_OCCURRED_AT", "MAX_CLIENT_NAME_CHARS",
    "MAX_CLIENT_VERSION_CHARS", "MAX_CONTENT_CHARS", "MAX_GIT_BRANCH_CHARS",
    "MAX_GIT_REPOSITORY_CHARS", "MAX_REFERENCE_CHARS", "MAX_SPEAKER_CHARS", "MAX_TAG_CHARS",
    "MAX_TURN_INDEX", "TURN_EVENT_SCHEMA_VERSION", "ClientInfo", "GitInfo", "Reference", "Role",
    "TurnEvent", "stable_event_id",
]  # fmt: skip

TURN_EVENT_SCHEMA_VERSION: Literal[1] = 1
"""Bumped on any incompatible change of :class:`TurnEvent`."""

MAX_CONTENT_CHARS = 200_000
"""Longest turn accepted; longer content is a typed validation error, not a truncation."""

ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
"""Ids travel into RQ job ids and Redis keys; RQ workers crash on anything else."""

MAX_TURN_INDEX = 10_000_000
"""Largest turn index accepted (a session longer than this is not a chat)."""

MAX_SPEAKER_CHARS = 100
MAX_CLIENT_NAME_CHARS = 100
MAX_CLIENT_VERSION_CHARS = 50
MAX_GIT_BRANCH_CHARS = 255
MAX_GIT_REPOSITORY_CHARS = 255
MAX_REFERENCE_CHARS = 1000
MAX_TAG_CHARS = 200
"""Length limits of the free-text fields; redaction keeps every field within its limit."""

EARLIEST_OCCURRED_AT = datetime(1970, 1, 1, tzinfo=UTC)
LATEST_OCCURRED_AT = datetime(9999, 1, 1, tzinfo=UTC)
"""``occurred_at`` must lie in [EARLIEST, LATEST) once converted to UTC: the graph stores
timestamps as fixed-width UTC ISO strings (four-digit years), and ``0001-01-01T00:30+05:00``
is a valid aware datetime whose conversion to UTC overflows."""


class Role(str, Enum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class ClientInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=MAX_CLIENT_NAME_CHARS)
    version: str = Field(default="0", max_length=MAX_CLIENT_VERSION_CHARS)


class GitInfo(BaseModel):
    """Optional repository state; paths only when the producer is configured to send them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    branch: str | None = Field(default=None, max_length=MAX_GIT_BRANCH_CHARS)
    commit: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{7,40}$")
    dirty: bool | None = None
    repository: str | None = Field(default=None, max_length=MAX_GIT_REPOSITORY_CHARS)


class Reference(BaseModel):
    """Something the turn points at: a file, plan, branch or issue."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["file", "plan", "branch", "issue", "pull_request", "commit", "url", "other"]
    value: str = Field(min_length=1, max_length=MAX_REFERENCE_CHARS)


def stable_event_id(session_id: str, turn_index: int, role: str) -> str:
    """The default idempotency key: the same turn always gets the same id."""
    digest = hashlib.sha256(f"{session_id}\x1f{turn_index}\x1f{role}".encode()).hexdigest()
    return f"t_{digest[:32]}"


class TurnEvent(BaseModel):
    """One finished chat turn.

    ``session_id``, ``workspace`` and ``user`` are scope keys; producers hash them with
    the installation salt before publishing (see ``producers.scopes``), so no raw
    workspace path or user name ever reaches Redis.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    schema_version: Literal[1] = TURN_EVENT_SCHEMA_VERSION
    event_id: str = Field(default="", pattern=r"^([A-Za-z0-9_-]{1,128})?$")
    session_id: str = Field(pattern=ID_PATTERN)
    workspace: str = Field(pattern=ID_PATTERN)
    user: str = Field(pattern=ID_PATTERN)
    turn_index: int = Field(ge=0, le=MAX_TURN_INDEX)
    role: Role
    speaker: str = Field(default="", max_length=MAX_SPEAKER_CHARS)
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    occurred_at: AwareDatetime
    client: ClientInfo
    git: GitInfo | None = None
    references: tuple[Reference, ...] = Field(default=(), max_length=100)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    tags: tuple[Annotated[str, Field(max_length=MAX_TAG_CHARS)], ...] = Field(
        default=(), max_length=50
    )

    @model_validator(mode="before")
    @classmethod
    def _default_event_id(cls, data: Any) -> Any:
        if isinstance(data, dict) and not data.get("event_id"):
            try:
                role = Role(data.get("role")).value
                data = {
                    **data,
                    "event_id": stable_event_id(
                        str(data["session_id"]), int(data["turn_index"]), role
                    ),
                }
            except (KeyError, ValueError, TypeError, OverflowError):
                pass  # the field validators report what is missing or wrong (inf, 1e999)
        return data

    @field_validator("content", mode="after")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():  # nothing to remember, and no memory can be built of it
            raise rule_error("content is blank: send a turn with text in it")
        return value

    @field_validator("occurred_at", mode="after")
    @classmethod
    def _writable_moment(cls, value: datetime) -> datetime:
        try:
            moment = value.astimezone(UTC)
        except OverflowError:
            raise rule_error(
                "occurred_at is out of range once converted to UTC: send a moment "
                "between 1970-01-01 and 9999-01-01 UTC"
            ) from None
        if not EARLIEST_OCCURRED_AT <= moment < LATEST_OCCURRED_AT:
            raise rule_error("occurred_at must lie between 1970-01-01 and 9999-01-01 UTC")
        return value
