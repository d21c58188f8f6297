"""One converter for the openai errors of every endpoint (extraction, summaries, embeddings),
driven through the real openai client against the local fake server."""

from __future__ import annotations

from collections.abc import Iterator

import openai
import pytest

from tests.support.fake_openai import FakeOpenAI, error_text
from turngraph.workers.embeddings.endpoint import EndpointEmbedder
from turngraph.workers.embeddings.errors import (
    EMBEDDING_ERRORS,
    EmbeddingModelError,
    EmbeddingUnavailableError,
)
from turngraph.workers.embeddings.in_process import InProcessEmbedder
from turngraph.workers.extraction.endpoint import LLMEndpoint
from turngraph.workers.extraction.errors import (
    LLM_ERRORS,
    LLMConfigurationError,
    LLMRequestError,
    LLMUnavailableError,
)
from turngraph.workers.extraction.llm import LLMExtractor
from turngraph.workers.llm_provider import (
    ENDPOINT_COUNTERS,
    EXTRACTION_COUNTERS,
    SUMMARY_COUNTERS,
    Provider,
    ProviderErrors,
    ProviderStats,
    convert_error,
)
from turngraph.workers.maintenance.llm_summary import LLMSummarizer

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
        assert isinstance(converted, errors.raised), status  # what callers catch
        assert str(status) in str(converted) and "own words" not in str(converted)


@pytest.mark.parametrize(("errors", "expected"), CASES)
def test_an_unreachable_endpoint_is_transient(
    errors: ProviderErrors, expected: tuple[type[Exception], ...]
) -> None:
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k", max_retries=0)
    with pytest.raises(openai.APIConnectionError) as raised:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "x"}])
    assert type(convert_error(raised.value, errors)) is expected[0]


def test_every_endpoint_class_is_declared_a_provider() -> None:
    """Declared as a base, so mypy checks each class against the shape where it is written."""
    for cls in (LLMExtractor, LLMSummarizer, LLMEndpoint, EndpointEmbedder, InProcessEmbedder):
        assert Provider in cls.__mro__, cls.__name__


def test_one_stats_class_counts_every_purpose_by_its_fixed_names() -> None:
    mirrored: list[dict[str, int]] = []
    stats = ProviderStats(SUMMARY_COUNTERS, mirror=mirrored.append)
    stats.add(calls=2, prompt_tokens=300)
    stats.add_reason("answer_cut_at_token_limit")
    assert (stats.calls, stats.fallbacks) == (2, 0)
    assert stats.snapshot() == dict.fromkeys(SUMMARY_COUNTERS, 0) | {
        "calls": 2,
        "prompt_tokens": 300,
    }
    assert stats.reasons() == {"answer_cut_at_token_limit": 1}
    assert mirrored == [
        {"calls": 2, "prompt_tokens": 300},
        {"fallback:answer_cut_at_token_limit": 1},
    ]
    with pytest.raises(KeyError, match="turns"):
        stats.add(turns=1)  # an extraction counter: a typo or the wrong purpose
    with pytest.raises(AttributeError):
        _ = stats.turns
    assert set(ENDPOINT_COUNTERS) <= set(EXTRACTION_COUNTERS)  # an extractor's own endpoint
    extraction = ProviderStats(EXTRACTION_COUNTERS)
    assert extraction.per_turn() == {
        "calls_per_turn": 0.0,
        "prompt_tokens_per_turn": 0.0,
        "completion_tokens_per_turn": 0.0,
    }
    extraction.add(turns=4, calls=2, prompt_tokens=800, completion_tokens=100)
    assert extraction.per_turn()["completion_tokens_per_turn"] == 25.0
