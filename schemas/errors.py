"""One exception root, split into transient (retry) and permanent (don't)."""

from __future__ import annotations


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
