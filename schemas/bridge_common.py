"""What every bridge request and reply shares: the echoed ``id``, raw scope keys, the
error codes and the failure reply (``schemas.bridge`` and ``schemas.bridge_distill``)."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, StrictInt, StrictStr

from turngraph.schemas.errors import ErrorCode

__all__ = [
    "MAX_FLUSH_TIMEOUT_S", "MAX_RAW_KEY_CHARS", "REPLY_CONFIG", "REQUEST_CONFIG", "Clamped",
    "ClampedOptions", "ErrorReply", "OpRequest", "RawKey", "RequestId", "SuccessReply",
    "WorkerReply", "error_reply",
]  # fmt: skip

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
        description="A scope key as the editor knows it (hashed by the bridge with the "
        "installation's salt before anything leaves this machine), or its id as `turngraph "
        "scopes` lists it (s_, w_ or u_ and 32 hex digits), taken as it is.",
    ),
]

REQUEST_CONFIG = ConfigDict(extra="forbid", frozen=True, strict=True)
REPLY_CONFIG = ConfigDict(extra="forbid")


class Clamped(BaseModel):
    """An option outside its range: what was asked and what was used."""

    model_config = REPLY_CONFIG

    requested: float
    used: float


ClampedOptions = Annotated[
    dict[str, Clamped] | None, Field(description="Options that were out of range, clamped into it.")
]


class OpRequest(BaseModel):
    """Base of the bridge's requests: checked strictly, with the ``id`` a reply echoes."""

    model_config = REQUEST_CONFIG

    id: RequestId | None = None


class SuccessReply(BaseModel):
    """Base of the bridge's success replies: the request's ``id`` echoed, ``success``."""

    model_config = REPLY_CONFIG

    id: RequestId | None = None
    success: Literal[True] = True


class ErrorReply(BaseModel):
    """Any failure: the seed bridge's contract (never chat text or secrets)."""

    model_config = REPLY_CONFIG

    id: RequestId | None = None
    success: Literal[False] = False
    error_code: ErrorCode
    user_message: str
    remediation: str
    pending: int | None = Field(default=None, description="flush: events still buffered.")
    clamped: ClampedOptions = None
    event_id: str | None = Field(
        default=None, description="publish (and MCP remember): the turn kept but not delivered yet."
    )
    confirmation_token: str | None = Field(
        default=None,
        description="MCP forget, where the client cannot ask its user: send it back as "
        "`confirm` once the user has agreed.",
    )


class WorkerReply(BaseModel):
    """Base of the replies a worker sends on a reply key (recall, distill); no fields of
    its own, so the exported schemas stay as their models say."""

    @classmethod
    def failure(
        cls, request_id: str, code: ErrorCode, user_message: str, remediation: str, **fields: Any
    ) -> Self:
        """The seed's failure contract; ``fields``: more of the model's fields."""
        return cls(
            request_id=request_id,
            success=False,
            error_code=code,
            user_message=user_message,
            remediation=remediation,
            **fields,
        )


def error_reply(code: ErrorCode, user_message: str, remediation: str) -> ErrorReply:
    """A failure reply (the one builder: the bridge, its stdin reader and the MCP tools).

    ``user_message`` and ``remediation`` say what failed and what to change; never chat text.
    """
    return ErrorReply(error_code=code, user_message=user_message, remediation=remediation)
