"""What the OpenAI-compatible endpoints have in common (extraction, summaries, embeddings):
one converter of the ``openai`` client's errors into ours.

The client (built in ``turngraph.clients``) retries 408/409/429 and 5xx itself: an error
that reaches us has been retried already, and is converted at the boundary with
``raise convert_error(err, ERRORS) from err``. Messages carry status and type only, never
a prompt or a text.
"""

from __future__ import annotations

from dataclasses import dataclass

import openai

from turngraph.schemas.errors import PermanentError, TransientError, TurngraphError

TRANSIENT_STATUS = frozenset({408, 409, 429})
"""Statuses worth trying later (besides 5xx)."""

CONFIGURATION_STATUS = frozenset({401, 403, 404})
"""Statuses that say the key, base URL or model is wrong."""


@dataclass(frozen=True)
class ProviderErrors:
    """The exceptions one endpoint's failures become, and how its messages name it."""

    service: str
    """``LLM endpoint``, ``embeddings endpoint``."""
    unavailable: type[TransientError]
    """Timeouts, unreachable, 5xx and ``TRANSIENT_STATUS``."""
    configuration: type[PermanentError]
    """``CONFIGURATION_STATUS``."""
    rejected: type[PermanentError]
    """Any other refusal of the request."""
    unknown: type[TurngraphError]
    """Any other ``openai`` error (no status: a malformed answer, a client-side failure)."""


def convert_error(err: openai.OpenAIError, errors: ProviderErrors) -> Exception:
    """An ``openai`` error as one of ours: transient (try later) or permanent."""
    service = errors.service
    if isinstance(err, openai.APITimeoutError):
        return errors.unavailable(f"{service} timed out")
    if isinstance(err, openai.APIConnectionError):
        return errors.unavailable(f"{service} unreachable")
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        if status >= 500 or status in TRANSIENT_STATUS:
            return errors.unavailable(f"{service} answered {status} after retries")
        if status in CONFIGURATION_STATUS:
            return errors.configuration(
                f"{service} answered {status}: check the API key, base URL and model"
            )
        return errors.rejected(f"{service} rejected the request ({status})")
    return errors.unknown(f"{service} call failed ({type(err).__name__})")
