"""Prometheus metrics: one ``/metrics`` endpoint per process (``TURNGRAPH_METRICS_PORT``).

Counters that live in Redis (the queue's, shared by every producer) are read at scrape
time by a custom collector, so every process reports the same totals: aggregate them
with ``max`` in PromQL, not ``sum``. Per-process figures (histograms, the LLM and
embedding calls, the recall replica's index and lag) are each process's own.
Every name this module exports is in :data:`EXPORTED_METRICS`; ``ops/prometheus`` and
``ops/grafana`` use only those (``tests/integration/test_metrics.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import fields
from typing import Any

import redis
import structlog
from prometheus_client import CollectorRegistry, Histogram, ProcessCollector, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector
from rq.registry import StartedJobRegistry

from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.request_server import ServeCounters
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.enrichment import read_status
from turngraph.workers.ingest.dead_letters import dead_letter_key
from turngraph.workers.recall.replica import CHANGE_STREAM_LAG, GRAPH_UNAVAILABLE
from turngraph.workers.recall.worker import RecallWorker

__all__ = [
    "BATCH_SIZE_BUCKETS", "EXPORTED_METRICS", "LATENCY_BUCKETS", "RECALL_BUCKETS",
    "REQUEST_OUTCOMES", "SECONDS_BUCKETS", "EmbeddingCollector", "IngestHistograms",
    "LLMCollector", "LLMSnapshot", "QueueCollector", "RecallCollector", "RequestCollector",
    "new_registry", "recall_histogram", "recall_queued_histogram", "serve_metrics",
]  # fmt: skip

log = structlog.get_logger(__name__)

EXPORTED_METRICS: dict[str, str] = {
    # queue (Redis counters, read at scrape time; the same in every process)
    "turngraph_redis_up": "gauge",
    "turngraph_queue_length": "gauge",
    "turngraph_queue_bound": "gauge",
    "turngraph_queue_published_total": "counter",
    "turngraph_queue_enqueued_total": "counter",
    "turngraph_queue_dropped_total": "counter",
    "turngraph_queue_duplicates_total": "counter",
    "turngraph_queue_dead_lettered_total": "counter",
    "turngraph_queue_not_stored_total": "counter",
    "turngraph_queue_dead_letters": "gauge",
    "turngraph_queue_running": "gauge",
    "turngraph_llm_reextract_pending": "gauge",
    "turngraph_llm_enrich_lag_seconds": "gauge",
    "turngraph_llm_enrich_dropped_total": "counter",
    # ingest worker
    "turngraph_ingest_batch_size": "histogram",
    "turngraph_ingest_batch_seconds": "histogram",
    "turngraph_ingest_latency_seconds": "histogram",
    "turngraph_llm_calls_total": "counter",
    "turngraph_llm_tokens_total": "counter",
    # recall replica
    "turngraph_recall_seconds": "histogram",
    "turngraph_recall_queued_seconds": "histogram",
    "turngraph_recall_answers_total": "counter",
    "turngraph_recall_degraded_total": "counter",
    "turngraph_recall_index_memories": "gauge",
    "turngraph_recall_change_stream_lag_seconds": "gauge",
    "turngraph_recall_bootstrapped": "gauge",
    "turngraph_embedding_calls_total": "counter",
    "turngraph_embedding_texts_total": "counter",
    "turngraph_embedding_tokens_total": "counter",
    # recall replica and maintenance worker (on-demand distillation asks)
    "turngraph_requests_total": "counter",
}
"""Every metric family a turngraph process can export, with its type (sample names of a
histogram add ``_bucket``, ``_sum``, ``_count``)."""

BATCH_SIZE_BUCKETS = (1, 2, 5, 10, 20, 50, 100)
SECONDS_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 900)
RECALL_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5)


class QueueCollector(Collector):
    """The bounded queue's Redis counters, read at every scrape."""

    def __init__(self, conn: redis.Redis, queue: str, bound: int) -> None:
        self._conn, self._queue, self._bound = conn, queue, bound

    def collect(self) -> Iterator[Metric]:
        queue = self._queue
        try:
            stats = read_stats(self._conn, queue)
            with self._conn.pipeline(transaction=False) as pipe:
                pipe.hlen(dead_letter_key(queue))
                (letters,) = pipe.execute()
            registry = StartedJobRegistry(queue, connection=self._conn)
            running = registry.get_job_count(cleanup=False)
            enrich = read_status(self._conn)
        except redis.RedisError:
            yield GaugeMetricFamily("turngraph_redis_up", "Redis answered this scrape", value=0)
            return
        yield GaugeMetricFamily("turngraph_redis_up", "Redis answered this scrape", value=1)
        yield _gauge("turngraph_queue_length", "turns waiting in the inbox", queue, stats.length)
        yield _gauge("turngraph_queue_bound", "the queue's length bound", queue, self._bound)
        for name, value, doc in (
            ("published", stats.published, "events that reached the inbox script"),
            ("enqueued", stats.enqueued, "events written to the inbox"),
            ("duplicates", stats.duplicates, "events already ingested (found at admission)"),
            ("dead_lettered", stats.dead_lettered, "turns refused or isolated as poison"),
        ):
            counter = CounterMetricFamily(f"turngraph_queue_{name}", doc, labels=["queue"])
            counter.add_metric([queue], value)
            yield counter
        dropped = CounterMetricFamily(
            "turngraph_queue_dropped", "events dropped, per policy", labels=["queue", "policy"]
        )
        dropped.add_metric([queue, "drop_newest"], stats.dropped_newest)
        dropped.add_metric([queue, "drop_oldest"], stats.dropped_oldest)
        dropped.add_metric([queue, "producer_buffer"], stats.dropped_local)
        yield dropped
        not_stored = CounterMetricFamily(
            "turngraph_queue_not_stored",
            "turns published and not stored, per reason (duplicates were stored before)",
            labels=["queue", "reason"],
        )
        for reason, value in stats.not_stored.items():
            not_stored.add_metric([queue, reason], value)
        yield not_stored
        yield _gauge("turngraph_queue_dead_letters", "dead letters kept", queue, letters)
        yield _gauge(
            "turngraph_queue_running", "batch jobs ingest workers are running", queue, running
        )
        yield GaugeMetricFamily(
            "turngraph_llm_reextract_pending",
            "the enrichment backlog: stored turns waiting for the LLM",
            value=enrich.backlog,
        )
        yield GaugeMetricFamily(
            "turngraph_llm_enrich_lag_seconds",
            "how long the longest-waiting turn of the enrichment backlog has waited",
            value=enrich.lag_s,
        )
        yield CounterMetricFamily(
            "turngraph_llm_enrich_dropped",
            "turns stored but never enriched: the enrichment backlog was full",
            value=enrich.dropped,
        )


def _gauge(name: str, doc: str, queue: str, value: float) -> GaugeMetricFamily:
    gauge = GaugeMetricFamily(name, doc, labels=["queue"])
    gauge.add_metric([queue], value)
    return gauge


LLMSnapshot = Callable[[], "dict[str, int] | None"]
"""This process's LLM counters of one purpose (``calls``, ``prompt_tokens``,
``completion_tokens``), or None while there are none (no summarizer installed yet)."""


class LLMCollector(Collector):
    """LLM calls and tokens of this process, per purpose (``summary`` and ``enrichment``
    in maintenance workers)."""

    def __init__(self, **purposes: LLMSnapshot) -> None:
        self._purposes = purposes

    def collect(self) -> Iterator[Metric]:
        calls = CounterMetricFamily(
            "turngraph_llm_calls", "LLM requests completed", labels=["purpose"]
        )
        tokens = CounterMetricFamily(
            "turngraph_llm_tokens", "LLM tokens reported", labels=["purpose", "kind"]
        )
        for purpose, read in sorted(self._purposes.items()):
            snap = read() or {}
            calls.add_metric([purpose], snap.get("calls", 0))
            tokens.add_metric([purpose, "prompt"], snap.get("prompt_tokens", 0))
            tokens.add_metric([purpose, "completion"], snap.get("completion_tokens", 0))
        yield calls
        yield tokens


class RecallCollector(Collector):
    """A recall replica's answers, degraded answers, index size and change-stream lag."""

    def __init__(self, worker: RecallWorker, embedder: Embedder | None) -> None:
        self._worker, self._embedder = worker, embedder

    def collect(self) -> Iterator[Metric]:
        worker = self._worker
        answers = CounterMetricFamily("turngraph_recall_answers", "recall requests answered")
        answers.add_metric([], worker.counters.answered)
        yield answers
        degraded = CounterMetricFamily(
            "turngraph_recall_degraded", "answers flagged degraded, per reason", labels=["reason"]
        )
        seen = dict.copy(worker.counters.degraded)  # one C-level copy: safe while serving
        counts = {GRAPH_UNAVAILABLE: 0, CHANGE_STREAM_LAG: 0, **seen}
        for reason, count in sorted(counts.items()):  # the replica's own reasons always shown
            degraded.add_metric([reason], count)
        yield degraded
        yield GaugeMetricFamily(
            "turngraph_recall_index_memories",
            "memories in the replica's index",
            value=len(worker.index),
        )
        yield GaugeMetricFamily(
            "turngraph_recall_change_stream_lag_seconds",
            "age of the oldest change-stream entry the replica has not applied",
            value=worker.lag_s,
        )
        yield GaugeMetricFamily(
            "turngraph_recall_bootstrapped",
            "1 once the graph's memories are in the index",
            value=int(worker.bootstrapped),
        )
        yield from _embedding_metrics(self._embedder)


REQUEST_OUTCOMES = tuple(f.name for f in fields(ServeCounters))
"""``answered``, ``skipped_late``, ``malformed``, ``refused_reply_to``, ``replies_lost``."""


class RequestCollector(Collector):
    """What a request/reply server did with every request it popped: the recall
    replica's searches, the maintenance worker's distillation asks (``answered`` there:
    admitted as a job, which replies)."""

    def __init__(self, server: str, counters: ServeCounters) -> None:
        self._server, self._counters = server, counters

    def collect(self) -> Iterator[Metric]:
        family = CounterMetricFamily(
            "turngraph_requests",
            "requests popped by a request/reply server, per outcome",
            labels=["server", "outcome"],
        )
        for outcome in REQUEST_OUTCOMES:
            family.add_metric([self._server, outcome], getattr(self._counters, outcome))
        yield family


class EmbeddingCollector(Collector):
    """An ingest worker's embedding calls (it embeds every memory of a batch once)."""

    def __init__(self, embedder: Embedder | None) -> None:
        self._embedder = embedder

    def collect(self) -> Iterator[Metric]:
        yield from _embedding_metrics(self._embedder)


def _embedding_metrics(embedder: Embedder | None) -> Iterator[Metric]:
    counts = embedder.stats.snapshot() if embedder is not None else {}
    calls, texts, tokens = (counts.get(n, 0) for n in ("calls", "texts", "prompt_tokens"))
    model = embedder.model if embedder is not None else "none"
    for name, value, doc in (
        ("calls", calls, "embedding calls (requests to an endpoint)"),
        ("texts", texts, "texts embedded"),
        ("tokens", tokens, "embedding tokens an endpoint reported (0 for the local model)"),
    ):
        family = CounterMetricFamily(f"turngraph_embedding_{name}", doc, labels=["model"])
        family.add_metric([model], value)
        yield family


class IngestHistograms:
    """Batch size, batch duration and admission-to-end latency of an ingest worker's batch
    jobs (its batch observer)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.batch_size = Histogram(
            "turngraph_ingest_batch_size",
            "turns per ingest batch job",
            buckets=BATCH_SIZE_BUCKETS,
            registry=registry,
        )
        self.batch_seconds = Histogram(
            "turngraph_ingest_batch_seconds",
            "seconds one batch took (claim, extract, write, finish)",
            buckets=SECONDS_BUCKETS,
            registry=registry,
        )
        self.latency = Histogram(
            "turngraph_ingest_latency_seconds",
            "seconds from a batch job's admission (RQ enqueue) to the end of the batch",
            buckets=LATENCY_BUCKETS,
            registry=registry,
        )

    def __call__(self, jobs: int, seconds: float, waited_s: float | None) -> None:
        self.batch_size.observe(jobs)
        self.batch_seconds.observe(seconds)
        if waited_s is not None:
            self.latency.observe(waited_s + seconds)


def recall_histogram(registry: CollectorRegistry) -> Histogram:
    return Histogram(
        "turngraph_recall_seconds",
        "seconds from a recall request's pop to its reply stored by Redis",
        buckets=RECALL_BUCKETS,
        registry=registry,
    )


def recall_queued_histogram(registry: CollectorRegistry) -> Histogram:
    return Histogram(
        "turngraph_recall_queued_seconds",
        "seconds a recall request waited in Redis before a replica took it (from the "
        "client's sent_at_ms)",
        buckets=RECALL_BUCKETS,
        registry=registry,
    )


def new_registry() -> CollectorRegistry:
    """A registry with the process collector (CPU, memory, open files)."""
    registry = CollectorRegistry()
    ProcessCollector(registry=registry)
    return registry


def serve_metrics(registry: CollectorRegistry, port: int | None, host: str) -> Any | None:
    """Start the ``/metrics`` endpoint in a daemon thread; returns the server (``None``
    when ``port`` is unset). ``shutdown()`` it when the process stops."""
    if port is None:
        return None
    server, _thread = start_http_server(port, addr=host, registry=registry)
    log.info("metrics_serving", host=host, port=server.server_port)
    return server
