"""Every metric we export is scraped from real worker processes after real traffic: an
ingest worker (the offline rules: it never calls the LLM), a recall replica (embeddings
through the local OpenAI-compatible server) and a maintenance worker (the LLM's
enrichment of the stored turns and an LLM summary, through the same server), each with
its own ``/metrics`` endpoint."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator

import pytest
import redis
from prometheus_client.parser import text_string_to_metric_families

from tests.support.fake_openai import FakeOpenAI, answer
from tests.support.rq_keys import RQ_QUEUE_PREFIX
from tests.support.tcp_gate import free_port
from tests.support.turns import turn
from tests.support.worker_processes import start_worker, stop, wait_for, worker_env
from turngraph.app import ingest_queue
from turngraph.clients import Clients
from turngraph.metrics import EXPORTED_METRICS
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.producers.distill_client import DistillClient
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.keys import DISTILL_REQUESTS
from turngraph.workers.recall.replica import read_heartbeats

pytestmark = pytest.mark.integration

TURNS = 20


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def scrape(port: int) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Sample name -> [(labels, value)] of one endpoint."""
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as reply:
        text = reply.read().decode()
    samples: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples.setdefault(sample.name, []).append((sample.labels, sample.value))
    return samples


def value(
    samples: dict[str, list[tuple[dict[str, str], float]]], name: str, **labels: str
) -> float:
    return sum(v for got, v in samples.get(name, []) if labels.items() <= got.items())


def test_every_exported_metric_is_scraped_after_real_traffic(
    clients: Clients, fake: FakeOpenAI
) -> None:
    conn, queue = clients.redis, ingest_queue(clients)
    events = [
        turn(f"metrics check {i}: edit src/m{i}.py", i, session="metrics") for i in range(TURNS)
    ]
    bounded = BoundedQueue(conn, name=queue.name, max_length=TURNS)
    bounded.enqueue_many(events)
    bounded.enqueue_many([turn("over the bound", 100 + i, session="metrics") for i in range(2)])
    conn.hset("rq:job:forged1", mapping={"status": "queued", "data": b""})  # dead-lettered
    conn.rpush(RQ_QUEUE_PREFIX + queue.name, "forged1")
    fake.add(*[answer({"turns": []}, prompt_tokens=300, completion_tokens=40) for _ in range(20)])
    ingest_port, recall_port, maintenance_port = free_port(), free_port(), free_port()
    base = {
        "TURNGRAPH_LLM_BASE_URL": fake.base_url,
        "TURNGRAPH_LLM_API_KEY": "test",
        "TURNGRAPH_LLM_MODEL": "test-model",
        "TURNGRAPH_EMBEDDING_PROVIDER": "openai",
        "TURNGRAPH_EMBEDDING_BASE_URL": fake.base_url,
        "TURNGRAPH_DISTILL_ENABLED": "false",
    }
    ingest = start_worker(
        "ingest", worker_env(clients, TURNGRAPH_METRICS_PORT=str(ingest_port), **base)
    )
    recall = start_worker(
        "recall", worker_env(clients, TURNGRAPH_METRICS_PORT=str(recall_port), **base)
    )
    maintenance = start_worker(
        "maintenance", worker_env(clients, TURNGRAPH_METRICS_PORT=str(maintenance_port), **base)
    )
    waiting = redis.Redis.from_url(str(clients.settings.redis_url), socket_timeout=90)
    try:
        assert wait_for(lambda: all(is_ingested(conn, e.event_id) for e in events), 120)
        bounded.enqueue_many(events[:3])  # already ingested: duplicates
        assert wait_for(lambda: read_heartbeats(conn), 90), "no recall replica"
        assert wait_for(lambda: read_heartbeats(conn)[0].memories >= TURNS, 60)
        client = RecallClient(conn, deadline_ms=5_000)
        for query in ("edit src/m3.py", "metrics check", "unknown words"):
            assert client.recall(query, session_id="s1", workspace="w1", user="u1").success
        client.recall("anything", session_id="s1", workspace="elsewhere", user="u1")
        conn.rpush(DISTILL_REQUESTS, b"not an ask")  # counted, and the next one served
        summary = DistillClient(waiting, deadline_ms=60_000).summarize("metrics", last_n=4)
        assert summary.success, summary.user_message  # through the LLM summarizer
        # A recall's latency is observed once its reply's push is known to be stored: when
        # the serving loop's next pop returns (with a request, or after its 1 s).
        assert wait_for(
            lambda: value(scrape(recall_port), "turngraph_recall_seconds_count") == 4, 10
        )
        ingest_samples, recall_samples = scrape(ingest_port), scrape(recall_port)
        maintenance_samples = scrape(maintenance_port)
    finally:
        outputs = [stop(ingest), stop(recall), stop(maintenance)]
        waiting.close()
    assert all(code == 0 for code, _ in outputs), outputs
    every = (ingest_samples, recall_samples, maintenance_samples)
    for samples in every:  # each process its own endpoint
        assert value(samples, "process_resident_memory_bytes") > 0
        assert value(samples, "turngraph_queue_enqueued_total") == TURNS  # from Redis: same
    scraped = set().union(*every)
    missing = []
    for name, kind in EXPORTED_METRICS.items():
        wanted = (
            [f"{name}_bucket", f"{name}_count", f"{name}_sum"] if kind == "histogram" else [name]
        )
        missing += [w for w in wanted if w not in scraped]
    assert not missing, missing

    # and they count the traffic
    q = {"queue": queue.name}
    assert value(ingest_samples, "turngraph_queue_published_total", **q) == TURNS + 2 + 3
    assert value(ingest_samples, "turngraph_queue_enqueued_total", **q) == TURNS
    assert value(ingest_samples, "turngraph_queue_dropped_total", policy="drop_newest", **q) == 2
    assert value(ingest_samples, "turngraph_queue_duplicates_total", **q) == 3
    assert value(ingest_samples, "turngraph_queue_dead_lettered_total", **q) == 1
    assert value(ingest_samples, "turngraph_queue_dead_letters", **q) == 1
    assert value(ingest_samples, "turngraph_queue_bound", **q) == clients.settings.max_queue_length
    assert value(ingest_samples, "turngraph_redis_up") == 1
    assert value(ingest_samples, "turngraph_ingest_batch_size_sum") >= TURNS
    assert value(ingest_samples, "turngraph_ingest_batch_seconds_count") >= 1
    assert value(ingest_samples, "turngraph_ingest_latency_seconds_count") >= 1
    # ingest never calls the LLM (issue 36): the maintenance worker enriches the turns
    assert value(ingest_samples, "turngraph_llm_calls_total") == 0
    assert value(maintenance_samples, "turngraph_llm_calls_total", purpose="enrichment") >= 1
    assert value(maintenance_samples, "turngraph_llm_calls_total", purpose="summary") >= 1
    assert value(maintenance_samples, "turngraph_llm_tokens_total", kind="prompt") >= 300
    assert value(maintenance_samples, "turngraph_llm_tokens_total", kind="completion") >= 40
    assert value(recall_samples, "turngraph_recall_answers_total") == 4
    recall_requests = {"server": "recall", "outcome": "answered"}
    assert value(recall_samples, "turngraph_requests_total", **recall_requests) == 4
    asks = {"server": "distill"}
    assert value(maintenance_samples, "turngraph_requests_total", outcome="answered", **asks) == 1
    assert value(maintenance_samples, "turngraph_requests_total", outcome="malformed", **asks) == 1
    assert value(recall_samples, "turngraph_recall_seconds_count") == 4
    assert value(recall_samples, "turngraph_recall_queued_seconds_count") == 4  # sent_at_ms
    assert value(recall_samples, "turngraph_recall_degraded_total", reason="no_scope_key") == 1
    assert value(recall_samples, "turngraph_recall_index_memories") >= TURNS
    assert value(recall_samples, "turngraph_recall_bootstrapped") == 1
    assert value(recall_samples, "turngraph_recall_change_stream_lag_seconds") >= 0
    # The ingest worker embeds every turn once; the replica embeds the queries it answers.
    assert value(ingest_samples, "turngraph_embedding_calls_total") >= 1
    assert value(ingest_samples, "turngraph_embedding_texts_total") >= TURNS
    assert value(ingest_samples, "turngraph_embedding_tokens_total") >= TURNS
    assert value(recall_samples, "turngraph_embedding_calls_total") >= 1
    assert value(recall_samples, "turngraph_embedding_texts_total") >= 4
