"""Typed errors of extraction; messages name status codes and types, never chat text."""

from __future__ import annotations

from turngraph.schemas.errors import ConfigurationError, PermanentError, TransientError
from turngraph.workers.llm_provider import ProviderErrors

__all__ = ["LLM_ERRORS", "LLMConfigurationError", "LLMRequestError", "LLMUnavailableError"]


class LLMUnavailableError(TransientError):
    """The LLM endpoint was rate-limited, failing (5xx), unreachable or too slow, after
    the openai client's own retries (which honour ``Retry-After``). The RQ job retries."""


class LLMConfigurationError(ConfigurationError):
    """The endpoint refused us: bad key (401/403) or unknown model/route (404)."""


class LLMRequestError(PermanentError):
    """The endpoint rejected the request itself (400/422): retrying the same cannot help."""


LLM_ERRORS = ProviderErrors(
    service="LLM endpoint",
    unavailable=LLMUnavailableError,
    configuration=LLMConfigurationError,
    unknown=LLMRequestError,
    rejected=LLMRequestError,
)
"""What the chat endpoint's failures become (extraction and summaries)."""
