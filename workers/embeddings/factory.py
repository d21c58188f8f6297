"""Build the configured embedder from plain arguments (the shell passes its settings)."""

from __future__ import annotations

from pathlib import Path

from turngraph.schemas.defaults import EmbeddingProviderName
from turngraph.workers.embeddings.composite import CompositeEmbedder
from turngraph.workers.embeddings.deadline import QueryEmbedder
from turngraph.workers.embeddings.in_process import InProcessEmbedder
from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR, StaticEmbedder
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.embeddings.transformer import (
    DEFAULT_CONTEXTUAL_DIR,
    TransformerEmbedder,
    is_transformer_folder,
)

__all__ = [
    "CONTEXTUAL_WEIGHT", "STATIC_WEIGHT", "build_embedder", "default_local_embedder",
    "local_embedder", "query_embedder",
]  # fmt: skip


def build_embedder(
    provider: EmbeddingProviderName,
    *,
    model_path: Path | None = None,
    base_url: str | None = None,
    api_key: str | None = None,
    model: str = "text-embedding-3-small",
    dimensions: int | None = None,
    batch_size: int = 128,
    timeout_s: float = 10.0,
    max_retries: int = 2,
) -> Embedder | None:
    """``local``: the in-process models (the shipped pair unless ``model_path``);
    ``openai``: any OpenAI-compatible endpoint; ``none``: lexical and graph only."""
    if provider == "none":
        return None
    if provider == "local":
        return local_embedder(model_path) if model_path else default_local_embedder()
    # Imported here: the openai package costs about a second of start-up CPU, which every
    # worker process would pay on a deployment that never calls an endpoint.
    from turngraph.workers.embeddings.endpoint import EndpointEmbedder

    return EndpointEmbedder(
        base_url=base_url,
        api_key=api_key,
        model=model,
        timeout_s=timeout_s,
        max_retries=max_retries,
        batch_size=batch_size,
        dimensions=dimensions,
    )


CONTEXTUAL_WEIGHT = 1.0
STATIC_WEIGHT = 1.0
"""The shipped pair's weights in the joined vector (measured: docs/history.md)."""


def default_local_embedder(
    *, contextual_weight: float = CONTEXTUAL_WEIGHT, static_weight: float = STATIC_WEIGHT
) -> Embedder:
    """The shipped pair: all-MiniLM-L6-v2 (ONNX, int8) on each memory alone, joined with
    its static distillation on the memory after its previous turn (the weights: each
    model's share of the joined vector, for the tuning loop)."""
    return CompositeEmbedder(
        TransformerEmbedder(DEFAULT_CONTEXTUAL_DIR),
        StaticEmbedder(DEFAULT_MODEL_DIR),
        contextual_weight=contextual_weight,
        static_weight=static_weight,
    )


def local_embedder(folder: Path) -> Embedder:
    """The in-process model in ``folder``: an ONNX sentence-transformer when it holds a
    ``model.onnx``, otherwise a model2vec static model."""
    if is_transformer_folder(folder):
        return TransformerEmbedder(folder)
    return StaticEmbedder(folder)


def query_embedder(embedder: Embedder) -> QueryEmbedder:
    """In-process models embed inline; endpoints on a thread, inside the budget."""
    return QueryEmbedder(embedder, inline=isinstance(embedder, InProcessEmbedder))
