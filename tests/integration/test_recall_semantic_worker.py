"""The recall worker with the default local model, through the pipeline and over Redis."""

from __future__ import annotations

import threading
import time

from producers.recall_client import RecallClient
from tests.support.turns import turn
from turngraph.app import build_embedder, build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.settings import Settings
from workers.embeddings.local import StaticEmbedder


def test_the_default_settings_give_the_local_model_and_none_gives_lexical_only() -> None:
    assert isinstance(build_embedder(Settings(_env_file=None)), StaticEmbedder)
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
