"""The ingest side of embeddings: the shared text, and a failing endpoint never slows
ingest for long (through the real openai client against the fake server)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from tests.support.fake_openai import FakeOpenAI, error
from tests.support.recall import memory
from turngraph.workers.embeddings.endpoint import EndpointEmbedder
from turngraph.workers.ingest.embeddings import MemoryEmbedder


class RecordingStore:
    """Stands in for the graph (``GraphVectors``): what was saved, and previous turns."""

    def __init__(self, previous: Mapping[str, str]) -> None:
        self.saved: dict[str, Sequence[float]] = {}
        self.previous = previous
        self.asked: list[tuple[str, str, int]] = []

    def save(self, model: str, vectors: Mapping[str, Sequence[float]]) -> None:
        self.saved.update(vectors)

    def previous_texts(self, turns: Sequence[tuple[str, str, int]]) -> dict[str, str]:
        self.asked += turns
        return {key: self.previous[key] for key, _, _ in turns if key in self.previous}


def _records(*items: tuple[str, str, int]) -> list:
    return [
        memory(key, text, turn_index=index, extra={"speaker": "Kate"}).to_record()
        for key, text, index in items
    ]


def test_texts_take_the_previous_turn_from_the_batch_else_the_graph() -> None:
    store = RecordingStore({"a": "Sam: Do you ski?"})
    with FakeOpenAI() as server:
        embedder = MemoryEmbedder(
            EndpointEmbedder(base_url=server.base_url, api_key="k", model="m", max_retries=0),
            store,
        )
        records = _records(("a", "Yes, every winter!", 3), ("b", "And you?", 4))
        assert embedder.texts(records) == [
            "Sam: Do you ski?\nKate: Yes, every winter!",
            "Kate: Yes, every winter!\nKate: And you?",
        ]
        assert store.asked == [("a", "s_1", 3)]  # only what the batch did not hold
        vectors = embedder.embed(records)
    assert set(vectors) == {"a", "b"} and set(store.saved) == {"a", "b"}
    assert vectors["a"].model == "openai:m" and len(vectors["a"].vector) > 1


def test_after_a_failure_batches_skip_the_embedder_until_the_cooldown_ends() -> None:
    now = [100.0]
    store = RecordingStore({})
    with FakeOpenAI() as server:
        endpoint = EndpointEmbedder(base_url=server.base_url, api_key="k", model="m",
                                    max_retries=0)  # fmt: skip
        embedder = MemoryEmbedder(endpoint, store, cooldown_s=30.0, clock=lambda: now[0])
        server.add_embeddings(error(503))
        assert embedder.embed(_records(("a", "first", 0))) == {}
        assert embedder.counters.failed == 1 and not store.saved
        requests = len(server.embedding_requests)
        now[0] += 10  # cooling down: no request at all
        assert embedder.embed(_records(("b", "second", 0))) == {}
        assert embedder.counters.skipped == 1
        assert len(server.embedding_requests) == requests
        now[0] += 25  # over: the endpoint is asked again, and answers
        assert set(embedder.embed(_records(("c", "third", 0)))) == {"c"}
        assert embedder.counters.embedded == 1 and set(store.saved) == {"c"}
