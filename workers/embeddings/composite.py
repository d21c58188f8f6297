"""Two in-process models as one vector space: the contextual model on the memory alone,
the static model on the memory after its previous turn, concatenated with weights.

The row ``[sqrt(wa)·a, sqrt(wb)·b] / sqrt(wa + wb)`` of unit rows ``a``, ``b`` is a unit
row whose dot product with another is ``(wa·cos_a + wb·cos_b) / (wa + wb)``: the fusion
of the two models' cosines, which storage, the change stream and search handle as one
ordinary vector. docs/recall.md ("The semantic signal").
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from turngraph.workers.embeddings.in_process import InProcessEmbedder
from turngraph.workers.embeddings.protocol import Embedder, Vectors
from turngraph.workers.embeddings.texts import own_part

__all__ = ["CompositeEmbedder"]


class CompositeEmbedder(InProcessEmbedder):
    """:class:`~workers.embeddings.protocol.Embedder` joining a contextual model (fed each
    memory's own text) and a static model (fed the text with its previous turn)."""

    def __init__(
        self,
        contextual: Embedder,
        static: Embedder,
        *,
        contextual_weight: float = 1.0,
        static_weight: float = 1.0,
    ) -> None:
        self.contextual = contextual
        self.static = static
        total = contextual_weight + static_weight
        self._scale_contextual = math.sqrt(contextual_weight / total)
        self._scale_static = math.sqrt(static_weight / total)
        name = (
            f"composite:{contextual.model}*{contextual_weight:g}+{static.model}*{static_weight:g}"
        )
        super().__init__(name, contextual.dimension + static.dimension)

    def embed(self, texts: Sequence[str]) -> Vectors:
        self._count(texts)
        contextual = self.contextual.embed([own_part(text) for text in texts])
        static = self.static.embed(texts)
        return np.hstack([contextual * self._scale_contextual, static * self._scale_static]).astype(
            np.float32, copy=False
        )
