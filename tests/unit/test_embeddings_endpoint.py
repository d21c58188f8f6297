"""The OpenAI-compatible embeddings path through the real openai client and a local server."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from tests.support.fake_openai import EMBEDDING_DIM, FakeOpenAI, error, hang
from turngraph.workers.embeddings.endpoint import EndpointEmbedder
from turngraph.workers.embeddings.errors import EmbeddingModelError, EmbeddingUnavailableError


@pytest.fixture
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _embedder(server: FakeOpenAI, **kwargs: object) -> EndpointEmbedder:
    options: dict[str, object] = {"timeout_s": 5.0, "max_retries": 2, "batch_size": 4}
    options.update(kwargs)
    return EndpointEmbedder(
        base_url=server.base_url,
        api_key="test-key",
        model="fake-embed",
        **options,  # type: ignore[arg-type]
    )


def test_texts_go_in_batches_and_come_back_in_order(server: FakeOpenAI) -> None:
    embedder = _embedder(server)
    texts = [f"text number {n} about cats" for n in range(10)]
    vectors = embedder.embed(texts)
    assert vectors.shape == (10, EMBEDDING_DIM) and embedder.dimension == EMBEDDING_DIM
    assert [len(r.body["input"]) for r in server.embedding_requests] == [4, 4, 2]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert embedder.stats.calls == 3 and embedder.stats.texts == 10
    assert embedder.model == "openai:fake-embed"


def test_a_429_with_retry_after_is_retried_by_the_client_and_counted(server: FakeOpenAI) -> None:
    server.add_embeddings(error(429, {"retry-after": "0.2"}))
    embedder = _embedder(server)
    vectors = embedder.embed(["one text"])
    assert vectors.shape == (1, EMBEDDING_DIM)
    first, second = server.embedding_requests
    assert second.at - first.at >= 0.2  # Retry-After was respected
    assert embedder.stats.rate_limited == 1 and embedder.stats.failures == 0


def test_refusals_are_permanent_and_exhaustion_is_transient(server: FakeOpenAI) -> None:
    server.add_embeddings(error(401))
    with pytest.raises(EmbeddingModelError, match="401"):
        _embedder(server).embed(["x"])
    server.add_embeddings(*[error(503) for _ in range(3)])
    embedder = _embedder(server, max_retries=2)
    with pytest.raises(EmbeddingUnavailableError, match="503"):
        embedder.embed(["x"])
    assert embedder.stats.failures == 1


def test_a_hung_endpoint_times_out_as_unavailable(server: FakeOpenAI) -> None:
    server.add_embeddings(hang())
    with pytest.raises(EmbeddingUnavailableError):
        _embedder(server, timeout_s=0.3, max_retries=0).embed(["x"])
