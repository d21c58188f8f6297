"""Embeddings made once by the ingest workers: stored in the graph with their model and
dimension, carried by the change stream and bootstrap, and rebuilt after a model change
(``turngraph embeddings rebuild``) while replicas keep answering. Real Redis, real
graph, real RQ worker; the new model is an endpoint (the fake OpenAI server)."""

from __future__ import annotations

import json
from typing import Any

import neo4j
import numpy as np
import pytest

from tests.support.conversation import CONVERSATION, ingest
from tests.support.fake_openai import FakeOpenAI
from turngraph.app import build_embedder, build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.schemas.changes import MemoryUpsert, decode_change
from turngraph.workers.embeddings.endpoint import EndpointEmbedder
from turngraph.workers.embeddings.factory import default_local_embedder
from turngraph.workers.embeddings.texts import embedding_text
from turngraph.workers.graph.vectors import GraphVectors, unpack
from turngraph.workers.ingest.embeddings import MemoryEmbedder
from turngraph.workers.ingest.rebuild import rebuild_embeddings

pytestmark = pytest.mark.integration


def _stored(clients: Clients) -> dict[str, tuple[str, int, int]]:
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.event_id AS id, e.embedding_model AS model, "
        "e.embedding_dim AS dim, e.embedding_f32 AS packed",
        database_=clients.graph_database,
    )
    found = {}
    for r in records:
        vector = unpack(r["packed"])
        found[r["id"]] = (r["model"], r["dim"], 0 if vector is None else len(vector))
    return found


def _upserts(clients: Clients) -> list[MemoryUpsert]:
    entries: Any = clients.redis.xrange(clients.settings.changes_stream)
    changes = [decode_change(fields) for _, fields in entries]
    return [c for c in changes if isinstance(c, MemoryUpsert)]


def test_ingest_embeds_once_and_replicas_take_the_vectors(clients: Clients) -> None:
    local = default_local_embedder()
    fed = build_recall_worker(clients)
    assert fed.bootstrap() == 0
    ingest(clients, CONVERSATION)

    stored = _stored(clients)
    assert set(stored) == {e.event_id for e in CONVERSATION}
    assert set(stored.values()) == {(local.model, local.dimension, local.dimension)}

    upserts = _upserts(clients)
    assert upserts and all(u.embedding is not None for u in upserts)
    assert {u.embedding.model for u in upserts if u.embedding} == {local.model}
    # The stream carries what the graph stores, and it is the shared embedding text:
    # the second turn of s1 is embedded after the first (the static part sees both, the
    # contextual part the turn alone).
    second = next(u for u in upserts if u.memory.id == CONVERSATION[1].event_id)
    assert second.embedding is not None
    text = embedding_text(CONVERSATION[1].content, CONVERSATION[0].content)
    expected = local.embed([text])[0]
    assert not np.allclose(local.embed([str(text)])[0], expected, atol=1e-3)
    assert np.allclose(second.embedding.vector, expected, atol=1e-5)

    while fed.apply_pending_changes(block_ms=None):
        pass
    semantic = fed.index.semantic
    assert semantic is not None
    assert semantic.counters.embedded == 0  # nothing embedded by the replica itself
    assert semantic.counters.received == len(upserts)

    restarted = build_recall_worker(clients)
    restarted.bootstrap()
    again = restarted.index.semantic
    assert again is not None and again.vectors is not None
    # Turns come from the graph's vectors; only the few directive memories are embedded.
    assert again.counters.received == len(CONVERSATION)
    assert again.counters.embedded == len(restarted.index) - len(CONVERSATION)
    query = local.embed(["retry uploads with exponential backoff"])[0]
    for event in CONVERSATION:
        a = fed.index.semantic.vectors.similarity([fed.index._ids[event.event_id]], query)
        b = again.vectors.similarity([restarted.index._ids[event.event_id]], query)
        assert list(a.values()) == pytest.approx(list(b.values()), abs=1e-5)


def test_rebuild_after_a_model_change_while_replicas_answer(clients: Clients) -> None:
    ingest(clients, CONVERSATION)
    old = build_recall_worker(clients)  # still on the local model
    old.bootstrap()
    start: Any = clients.redis.xrevrange(clients.settings.changes_stream, count=1)
    with FakeOpenAI() as server:
        new_settings = clients.settings.model_copy(
            update={"embedding_provider": "openai", "embedding_base_url": server.base_url,
                    "embedding_model": "fake-embed", "embedding_max_retries": 0}
        )  # fmt: skip
        endpoint = build_embedder(new_settings)
        assert isinstance(endpoint, EndpointEmbedder)
        vectors = GraphVectors(clients.graph, clients.graph_database)
        report = rebuild_embeddings(
            vectors.stale(endpoint.model),
            MemoryEmbedder(endpoint, vectors),
            clients.redis,
            clients.settings.changes_stream,
        )
        assert report.embedded == len(CONVERSATION)
        stored = _stored(clients)
        assert {model for model, _, _ in stored.values()} == {endpoint.model}
        assert {dim for _, dim, n in stored.values() if dim == n} == {endpoint.dimension}
        # Nothing is stale any more: a second run embeds nothing.
        again = rebuild_embeddings(
            vectors.stale(endpoint.model),
            MemoryEmbedder(endpoint, vectors),
            clients.redis,
            clients.settings.changes_stream,
        )
        assert again.embedded == 0

        # The replica on the old model ignores the new vectors and keeps answering.
        before = old.index.semantic.counters.embedded
        while old.apply_pending_changes(block_ms=None):
            pass
        assert old.index.semantic.counters.foreign == len(CONVERSATION)
        assert old.index.semantic.counters.embedded == before
        assert old.handle(_request("retry uploads backoff")).results

        # A replica restarted on the new model bootstraps the stored vectors.
        new = build_recall_worker(clients, embedder=endpoint)
        texts_before = endpoint.stats.texts
        new.bootstrap()
        assert new.index.semantic.counters.received == len(CONVERSATION)
        # Only the directive memories were sent to the endpoint.
        assert endpoint.stats.texts - texts_before == len(new.index) - len(CONVERSATION)
        response = new.handle(_request("retry uploads backoff"))
        assert response is not None and response.results and not response.degraded
    assert start  # the rebuild appended after what ingest wrote


def _request(query: str) -> bytes:
    body = {"query": query, "workspace": "w1", "user": "u1", "scopes": ["workspace"]}
    return json.dumps(body).encode()


def test_a_batch_with_a_model_reads_its_previous_turns_in_its_write(
    clients: Clients, monkeypatch: pytest.MonkeyPatch
) -> None:
    pipeline = build_pipeline(clients)  # the default local model pair
    pipeline.ingest(CONVERSATION[:2])  # s1's turns 0 and 1
    transactions: list[str] = []

    def counted(name: str, original: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            transactions.append(name)
            return original(*args, **kwargs)

        return call

    for owner, name in (
        (neo4j.Session, "execute_write"),
        (neo4j.Session, "execute_read"),
        (neo4j.Session, "begin_transaction"),
        (neo4j.Driver, "execute_query"),
    ):
        monkeypatch.setattr(owner, name, counted(name, getattr(owner, name)))  # fmt: skip

    pipeline.ingest([CONVERSATION[2]])  # s1's turn 2: its previous turn is in the graph

    # the write (its previous turn read with the chain), then its vector: no read between
    assert transactions == ["execute_write", "execute_write"]
    upsert = next(u for u in _upserts(clients) if u.memory.id == CONVERSATION[2].event_id)
    assert upsert.embedding is not None
    text = embedding_text(CONVERSATION[2].content, CONVERSATION[1].content)
    expected = default_local_embedder().embed([text])[0]
    assert np.allclose(upsert.embedding.vector, expected, atol=1e-5)
