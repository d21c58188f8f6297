"""Embedding errors: transient (the endpoint is busy or away) or permanent (bad model)."""

from __future__ import annotations

from turngraph.schemas.errors import ConfigurationError, TransientError


class EmbeddingUnavailableError(TransientError):
    """The embeddings endpoint did not answer in time, refused, or rate-limited us."""


class EmbeddingModelError(ConfigurationError):
    """A model folder that cannot be loaded: missing, incomplete or not the shipped bytes."""
