"""What every bridge request and reply shares: the echoed ``id``, raw scope keys, the
error codes and the failure reply (``schemas.bridge`` and ``schemas.bridge_distill``)."""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

MAX_RAW_KEY_CHARS = 4_096
"""Longest raw scope key (a workspace path) the bridge hashes."""

MAX_FLUSH_TIMEOUT_S = 30.0
"""``flush`` waits at most this long; a longer ``timeout_s`` is clamped and reported."""

RequestId = Annotated[
    StrictStr | StrictInt,
    Field(description="Any string or integer; echoed unchanged in the reply."),
]
RawKey = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_RAW_KEY_CHARS,
        description="A raw scope key (e.g. the workspace folder's path); the bridge hashes "
        "it with the installation's salt before anything leaves this machine.",
    ),
]

REQUEST_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True)
REPLY_CONFIG = ConfigDict(extra="forbid")


class BridgeErrorCode(StrEnum):
    """Every ``error_code`` a bridge or MCP reply can carry (the recall codes included).

    ``NOT_AVAILABLE``: the operation exists in the protocol but not in this version;
    ``CONFIRMATION_REQUIRED``: a destructive MCP tool (forget) the user has not confirmed;
    ``NOT_FOUND``: a distill op found nothing to work on (no turns, no such memory);
    ``REFUSED``: promote refused content that looks like a secret.
    """

    INVALID_JSON = "INVALID_JSON"
    INVALID_ENCODING = "INVALID_ENCODING"
    INVALID_REQUEST = "INVALID_REQUEST"
    UNKNOWN_OP = "UNKNOWN_OP"
    CONSENT_REQUIRED = "CONSENT_REQUIRED"
    BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"
    DEADLINE_EXCEEDED = "DEADLINE_EXCEEDED"
    NOT_AVAILABLE = "NOT_AVAILABLE"
    CONFIRMATION_REQUIRED = "CONFIRMATION_REQUIRED"
    NOT_FOUND = "NOT_FOUND"
    REFUSED = "REFUSED"
    INTERNAL_ERROR = "INTERNAL_ERROR"


class Clamped(BaseModel):
    """An option outside its range: what was asked and what was used."""

    model_config = REPLY_CONFIG

    requested: float
    used: float


ClampedOptions = Annotated[
    dict[str, Clamped] | None,
    Field(description="Options that were out of range, clamped into it."),
]


class ErrorReply(BaseModel):
    """Any failure: the seed bridge's contract (never chat text or secrets)."""

    model_config = REPLY_CONFIG

    id: RequestId | None = None
    success: Literal[False] = False
    error_code: BridgeErrorCode
    user_message: str
    remediation: str
    pending: int | None = Field(default=None, description="flush: events still buffered.")
    clamped: ClampedOptions = None
    event_id: str | None = Field(
        default=None,
        description="publish (and MCP remember): the turn kept but not delivered yet.",
    )
    confirmation_token: str | None = Field(
        default=None,
        description="MCP forget, where the client cannot ask its user: send it back as "
        "`confirm` once the user has agreed.",
    )
