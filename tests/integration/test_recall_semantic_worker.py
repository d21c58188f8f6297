"""The recall worker with the default local model, through the pipeline and over Redis."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from tests.support.fake_openai import FakeOpenAI, hang
from tests.support.turns import turn
from turngraph.app import build_embedder, build_graph_store, build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.recall import RecallResponse
from turngraph.settings import Settings
from turngraph.workers.embeddings.composite import CompositeEmbedder
from turngraph.workers.graph.vectors import GraphVectors
from turngraph.workers.recall.worker import RecallWorker


def test_the_default_settings_give_the_local_model_and_none_gives_lexical_only() -> None:
    assert isinstance(build_embedder(Settings(_env_file=None)), CompositeEmbedder)
    assert build_embedder(Settings(_env_file=None, embedding_provider="none")) is None


def test_a_paraphrase_is_recalled_over_redis_and_fresh_turns_get_vectors(clients: Clients) -> None:
    pipeline = build_pipeline(clients)
    pipeline.ingest(
        [
            turn("I adore skiing down snowy mountains every January.", 0),
            turn("The quarterly invoice for the accountant is overdue.", 1),
            *[turn(f"We ordered lunch {n} from the corner place.", n + 2) for n in range(20)],
        ]
    )
    recall = build_recall_worker(clients)
    assert recall.bootstrap() == 22
    assert recall.index.semantic is not None
    server = threading.Thread(target=recall.run, daemon=True)
    server.start()
    try:
        client = RecallClient(clients.redis, deadline_ms=5_000)
        response = client.recall(
            "which winter sport does she enjoy?", session_id="s1", workspace="w1", user="u1"
        )
        assert response.success and response.degraded == []
        assert "skiing" in response.results[0].text
        fresh = turn("Our cat Miso hates the vet and hides under the sofa.", 30)
        pipeline.ingest([fresh])
        deadline = time.monotonic() + 10
        found: list[str] = []
        while time.monotonic() < deadline:  # the tail applies the change on its next XREAD
            results = client.recall(
                "which pet is scared of animal doctors?", session_id="s1", workspace="w1", user="u1"
            ).results
            found = results[0].source_event_ids if results else []
            if fresh.event_id in found:
                break
        assert fresh.event_id in found
    finally:
        recall.stop()
        server.join(timeout=10)


def test_the_replica_degrades_to_lexical_when_the_embedder_is_slow_then_down(
    clients: Clients,
) -> None:
    server = FakeOpenAI().__enter__()
    endpoint = clients.settings.model_copy(
        update={"embedding_provider": "openai", "embedding_base_url": server.base_url,
                "embedding_model": "fake-embed", "embedding_max_retries": 0,
                "embedding_timeout_s": 5.0}
    )  # fmt: skip
    pipeline = build_pipeline(replace(clients, settings=endpoint))
    pipeline.ingest([turn("The retry policy uses exponential backoff.", 0),
                     turn("Lunch was pizza again.", 1)])  # fmt: skip
    recall = RecallWorker(
        redis_client=clients.redis,
        store=build_graph_store(clients),
        vectors=GraphVectors(clients.graph, clients.graph_database),
        embedder=build_embedder(endpoint),
        requests_key=clients.settings.recall_requests_key,
        changes_stream=clients.settings.changes_stream,
        reply_ttl_s=5,
    )
    recall.bootstrap()
    assert recall.index.semantic is not None
    assert recall.index.semantic.counters.received == 2  # the ingest worker embedded them
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    client = RecallClient(clients.redis, deadline_ms=5_000)

    def ask(deadline_ms: int, query: str) -> RecallResponse:
        # each ask is a new query: a repeated one takes its vector from the replica's cache
        return client.recall(query, workspace="w1", user="u1", deadline_ms=deadline_ms)

    stopped = False
    try:
        assert ask(5_000, "retry policy backoff").degraded == []
        server.add_embeddings(hang())  # slow: the query vector misses its budget
        started = time.monotonic()
        slow = ask(400, "the retry policy's backoff")
        assert slow.success and slow.degraded == ["semantic_timeout"]
        assert "retry policy" in slow.results[0].text  # lexical still answers
        assert time.monotonic() - started < 0.4
        server.stop_hangs()
        server.__exit__(None, None, None)  # down: nothing listens any more
        stopped = True
        down = ask(5_000, "backoff of the retry policy")
        assert down.success and down.degraded == ["semantic_unavailable"]
        assert "retry policy" in down.results[0].text
    finally:
        if not stopped:
            server.__exit__(None, None, None)
        recall.stop()
        thread.join(timeout=10)
