"""TurnEvent: one finished chat turn, as a producer publishes it."""

from __future__ import annotations

import hashlib
from enum import Enum
from typing import Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

TURN_EVENT_SCHEMA_VERSION: Literal[1] = 1
"""Bumped on any incompatible change of :class:`TurnEvent`."""

MAX_CONTENT_CHARS = 200_000
"""Longest turn accepted; longer content is a typed validation error, not a truncation."""

ID_PATTERN = r"^[A-Za-z0-9_-]{1,128}$"
"""Ids travel into RQ job ids and Redis keys; RQ workers crash on anything else."""


class Role(str, Enum):
    USER = "user"
    ASSISTANT = "assistant"
    SYSTEM = "system"
    TOOL = "tool"


class ClientInfo(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=100)
    version: str = Field(default="0", max_length=50)


class GitInfo(BaseModel):
    """Optional repository state; paths only when the producer is configured to send them."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    branch: str | None = Field(default=None, max_length=255)
    commit: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{7,40}$")
    dirty: bool | None = None
    repository: str | None = Field(default=None, max_length=255)


class Reference(BaseModel):
    """Something the turn points at: a file, plan, branch or issue."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["file", "plan", "branch", "issue", "pull_request", "commit", "url", "other"]
    value: str = Field(min_length=1, max_length=1000)


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

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = TURN_EVENT_SCHEMA_VERSION
    event_id: str = Field(default="", pattern=r"^([A-Za-z0-9_-]{1,128})?$")
    session_id: str = Field(pattern=ID_PATTERN)
    workspace: str = Field(pattern=ID_PATTERN)
    user: str = Field(pattern=ID_PATTERN)
    turn_index: int = Field(ge=0, le=10_000_000)
    role: Role
    speaker: str = Field(default="", max_length=100)
    content: str = Field(min_length=1, max_length=MAX_CONTENT_CHARS)
    occurred_at: AwareDatetime
    client: ClientInfo
    git: GitInfo | None = None
    references: tuple[Reference, ...] = Field(default=(), max_length=100)
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    tags: tuple[str, ...] = Field(default=(), max_length=50)

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
            except (KeyError, ValueError, TypeError):
                pass  # the field validators report what is missing or wrong
        return data
