"""One exception root, split into transient (retry) and permanent (don't)."""

from __future__ import annotations

from enum import StrEnum

__all__ = [
    "BackendUnavailableError", "ConfigurationError", "EmbeddedServiceError", "ErrorCode",
    "InvalidPayloadError", "PermanentError", "TransientError", "TurngraphError",
]  # fmt: skip


class TurngraphError(Exception):
    """Root of every error this project raises on purpose."""


class TransientError(TurngraphError):
    """Worth retrying: a backend was unreachable, busy or rate-limited."""


class PermanentError(TurngraphError):
    """Retrying cannot help: bad input, a broken configuration."""


class InvalidPayloadError(PermanentError):
    """A job or wire payload failed validation. The message never quotes chat text."""


class ConfigurationError(PermanentError):
    """Settings or files that cannot work."""


class BackendUnavailableError(TransientError):
    """Redis or the graph server did not answer."""


class EmbeddedServiceError(TurngraphError):
    """An embedded server failed to start or stop."""


class ErrorCode(StrEnum):
    """Every ``error_code`` a reply can carry: the bridge, the MCP tools, recall and distill
    workers (one enum; prints as its value, ``DEADLINE_EXCEEDED``).

    ``NOT_AVAILABLE``: the operation exists in the protocol but not in this version;
    ``CONFIRMATION_REQUIRED``: a destructive MCP tool (forget) the user has not confirmed;
    ``NOT_FOUND``: a distill op found nothing to work on (no turns, no such memory);
    ``REFUSED``: promote refused content that looks like a secret;
    ``UNAUTHORIZED``: the local endpoint's token was missing or wrong.
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
    UNAUTHORIZED = "UNAUTHORIZED"
    INTERNAL_ERROR = "INTERNAL_ERROR"
