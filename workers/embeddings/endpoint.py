"""Embeddings from any OpenAI-compatible endpoint (OpenAI, Azure, Ollama, vLLM, TEI, LM
Studio) through the official ``openai`` client.

Texts go in batches of ``batch_size``. Rate limits and server errors are retried by the
client itself (``max_retries``, honouring ``Retry-After``): this class adds no retry loop
of its own, it counts what happened (an HTTP response hook sees every 429, including
the ones the client retried) and converts what is left into our errors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import openai

from turngraph.workers.embeddings.errors import EMBEDDING_ERRORS, EmbeddingUnavailableError
from turngraph.workers.embeddings.protocol import Embedder, Vectors, normalise_rows
from turngraph.workers.llm_provider import EMBEDDING_COUNTERS, ProviderStats, convert_error

__all__ = ["DEFAULT_BATCH_SIZE", "EndpointEmbedder"]

DEFAULT_BATCH_SIZE = 128
"""Texts per request (OpenAI accepts up to 2,048; local servers prefer fewer)."""


class EndpointEmbedder(Embedder):
    """:class:`~workers.embeddings.protocol.Embedder` through ``client.embeddings.create``."""

    def __init__(
        self,
        *,
        base_url: str | None,
        api_key: str | None,
        model: str,
        timeout_s: float = 10.0,
        max_retries: int = 2,
        batch_size: int = DEFAULT_BATCH_SIZE,
        dimensions: int | None = None,
    ) -> None:
        self.stats = ProviderStats(EMBEDDING_COUNTERS)
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "not-needed",
            timeout=timeout_s,
            max_retries=max_retries,
            http_client=openai.DefaultHttpxClient(event_hooks={"response": [self._saw_response]}),
        )
        self._model = model
        self._batch_size = max(1, batch_size)
        self._dimensions = dimensions
        self._dimension = dimensions or 0

    def _saw_response(self, response: Any) -> None:
        if response.status_code == 429:
            self.stats.add(rate_limited=1)

    @property
    def model(self) -> str:
        return f"openai:{self._model}"

    @property
    def dimension(self) -> int:
        """Known after the first answer (or from ``dimensions`` when given)."""
        return self._dimension

    def embed(self, texts: Sequence[str]) -> Vectors:
        rows: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            rows += self._batch(list(texts[start : start + self._batch_size]))
        if not rows:
            return np.zeros((0, self._dimension), dtype=np.float32)
        vectors = normalise_rows(np.asarray(rows, dtype=np.float32))
        self._dimension = vectors.shape[1]
        return vectors

    def _batch(self, texts: list[str]) -> list[list[float]]:
        self.stats.add(calls=1, texts=len(texts))
        try:
            if self._dimensions is not None:
                answer = self._client.embeddings.create(
                    model=self._model, input=texts, dimensions=self._dimensions
                )
            else:
                answer = self._client.embeddings.create(model=self._model, input=texts)
        except openai.OpenAIError as err:
            self.stats.add(failures=1)
            raise convert_error(err, EMBEDDING_ERRORS) from err
        usage = getattr(answer, "usage", None)
        if usage is not None and isinstance(getattr(usage, "prompt_tokens", None), int):
            self.stats.add(prompt_tokens=usage.prompt_tokens)
        data = sorted(answer.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise EmbeddingUnavailableError("the endpoint answered a different number of vectors")
        return [list(item.embedding) for item in data]

    def close(self) -> None:
        self._client.close()
