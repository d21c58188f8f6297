"""Embedding errors: transient (the endpoint is busy or away) or permanent (bad model)."""

from __future__ import annotations

from turngraph.schemas.errors import ConfigurationError, TransientError
from turngraph.workers.llm_provider import ProviderErrors

__all__ = ["EMBEDDING_ERRORS", "EmbeddingModelError", "EmbeddingUnavailableError"]


class EmbeddingUnavailableError(TransientError):
    """The embeddings endpoint did not answer in time, refused, or rate-limited us."""


class EmbeddingModelError(ConfigurationError):
    """A model folder that cannot be loaded: missing, incomplete or not the shipped bytes."""


EMBEDDING_ERRORS = ProviderErrors(
    service="embeddings endpoint",
    unavailable=EmbeddingUnavailableError,
    configuration=EmbeddingModelError,
    unknown=EmbeddingUnavailableError,
    rejected=EmbeddingModelError,
)
"""What the embeddings endpoint's failures become (a refused request: the model or its
input is wrong, retrying cannot help)."""
