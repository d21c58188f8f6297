"""The one boundary every embedding provider implements."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from turngraph.workers.llm_provider import Provider

__all__ = ["Embedder", "Vectors", "normalise_rows"]

Vectors = npt.NDArray[np.float32]
"""``(n, dimension)`` float32 rows, each L2-normalised (cosine = dot product)."""


class Embedder(Provider, Protocol):
    """Any embedding provider: the in-process static model or an OpenAI-compatible endpoint.

    ``model`` and ``dimension`` name the vector space; vectors of different spaces are
    never compared. ``embed`` raises :class:`~workers.embeddings.errors.EmbeddingError`
    (transient or permanent), never a library error; ``stats`` counts its calls and texts.
    """

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...


def normalise_rows(vectors: Vectors) -> Vectors:
    """Rows scaled to unit length (all-zero rows stay zero)."""
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (vectors / norms).astype(np.float32, copy=False)
