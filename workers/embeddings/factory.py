"""Build the configured embedder from plain arguments (the shell passes its settings)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from workers.embeddings.deadline import QueryEmbedder
from workers.embeddings.local import DEFAULT_MODEL_DIR, StaticEmbedder
from workers.embeddings.protocol import Embedder

Provider = Literal["local", "openai", "none"]


def build_embedder(
    provider: Provider,
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
    """``local``: the in-process static model (the shipped one unless ``model_path``);
    ``openai``: any OpenAI-compatible endpoint; ``none``: lexical and graph only."""
    if provider == "none":
        return None
    if provider == "local":
        return StaticEmbedder(model_path or DEFAULT_MODEL_DIR)
    # Imported here: the openai package costs about a second of start-up CPU, which every
    # worker process would pay on a deployment that never calls an endpoint.
    from workers.embeddings.endpoint import EndpointEmbedder

    return EndpointEmbedder(
        base_url=base_url,
        api_key=api_key,
        model=model,
        timeout_s=timeout_s,
        max_retries=max_retries,
        batch_size=batch_size,
        dimensions=dimensions,
    )


def query_embedder(embedder: Embedder) -> QueryEmbedder:
    """In-process models embed inline; endpoints on a thread, inside the budget."""
    return QueryEmbedder(embedder, inline=isinstance(embedder, StaticEmbedder))
