"""One converter for the openai errors of every endpoint (extraction, summaries, embeddings),
driven through the real openai client against the local fake server."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI, error_text
from turngraph.workers.embeddings.errors import (
    EMBEDDING_ERRORS,
    EmbeddingModelError,
    EmbeddingUnavailableError,
)
from turngraph.workers.extraction.errors import (
    LLM_ERRORS,
    LLMConfigurationError,
    LLMRequestError,
    LLMUnavailableError,
)
from turngraph.workers.llm_provider import ProviderErrors, convert_error

CASES = [
    (LLM_ERRORS, (LLMUnavailableError, LLMConfigurationError, LLMRequestError)),
    (EMBEDDING_ERRORS, (EmbeddingUnavailableError, EmbeddingModelError, EmbeddingModelError)),
]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as fake:
        yield fake


def _raised(server: FakeOpenAI, status: int) -> openai.OpenAIError:
    server.add(error_text(status, "the server's own words"))
    client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
    with pytest.raises(openai.OpenAIError) as raised:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    return raised.value


@pytest.mark.parametrize(("errors", "expected"), CASES)
def test_statuses_become_transient_or_permanent(
    server: FakeOpenAI, errors: ProviderErrors, expected: tuple[type[Exception], ...]
) -> None:
    unavailable, configuration, rejected = expected
    for status, kind in [(429, unavailable), (503, unavailable), (401, configuration),
                         (404, configuration), (400, rejected), (422, rejected)]:  # fmt: skip
        converted = convert_error(_raised(server, status), errors)
        assert type(converted) is kind, status
        assert str(status) in str(converted) and "own words" not in str(converted)


@pytest.mark.parametrize(("errors", "expected"), CASES)
def test_an_unreachable_endpoint_is_transient(
    errors: ProviderErrors, expected: tuple[type[Exception], ...]
) -> None:
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIConnectionError) as raised:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert type(convert_error(raised.value, errors)) is expected[0]
