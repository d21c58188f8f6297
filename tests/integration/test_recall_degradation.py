"""Honest degradation of the recall replica, with real servers and a real worker process:
started while the graph is down it serves at once (``graph_unavailable``), learns from the
change stream meanwhile, catches up when the graph returns, and says so again when the
graph goes down later; a replica behind the stream says ``change_stream_lag``; SIGTERM
loses no popped request."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from tests.support.tcp_gate import TcpGate
from tests.support.turns import turn
from tests.support.worker_processes import start_worker, stop, wait_for, worker_env
from turngraph.app import build_graph_store, build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.changes import MemoryRecord
from turngraph.schemas.recall import RecallRequest
from turngraph.schemas.shards import WorkspaceFilter
from turngraph.workers.recall.bootstrap import MemorySource
from turngraph.workers.recall.replica import (
    CHANGE_STREAM_LAG,
    GRAPH_UNAVAILABLE,
    heartbeat_key,
    read_heartbeats,
)
from turngraph.workers.recall.worker import GRAPH_PROBE_EVERY_S, GRAPH_STALE_S, RecallWorker

pytestmark = pytest.mark.integration

SCOPE = {"session_id": "s1", "workspace": "w1", "user": "u1"}


def test_a_replica_started_while_the_graph_is_down_serves_at_once_and_catches_up(
    clients: Clients,
) -> None:
    pipeline = build_pipeline(clients)
    old = turn("The billing service retries webhooks with exponential backoff.", 0)
    pipeline.ingest([old])
    graph = urlparse(str(clients.settings.graph_uri))
    gate = TcpGate(graph.hostname or "127.0.0.1", int(graph.port or 7687))  # closed: down
    env = worker_env(clients, TURNGRAPH_GRAPH_URI=f"bolt://127.0.0.1:{gate.port}")
    conn = clients.redis
    proc = start_worker("recall", env)
    try:
        assert wait_for(lambda: read_heartbeats(conn), 90), "the replica never started"
        assert not read_heartbeats(conn)[0].bootstrapped
        client = RecallClient(conn, deadline_ms=2_000)
        started = time.monotonic()
        down = client.recall("webhooks backoff", **SCOPE)
        took = time.monotonic() - started
        assert down.success, down
        assert took < 2.0  # within the deadline, no driver retry in the way
        assert GRAPH_UNAVAILABLE in down.degraded
        assert not down.results  # the graph's memories are not there yet

        fresh = turn("The invoice exporter writes Parquet files nightly.", 1)
        pipeline.ingest([fresh])  # the stream still reaches the replica
        assert wait_for(lambda: client.recall("invoice exporter parquet", **SCOPE).results, 10), (
            "the change stream was not applied while the graph was down"
        )

        gate.open()  # the graph returns
        assert wait_for(lambda: read_heartbeats(conn)[0].bootstrapped, 90), "never caught up"
        up = client.recall("webhooks backoff", **SCOPE)
        assert up.success and GRAPH_UNAVAILABLE not in up.degraded
        assert up.results and up.results[0].source_event_ids == [old.event_id]
        assert client.recall("invoice exporter parquet", **SCOPE).results

        gate.close()  # the graph goes down again: answers from the index, flagged
        assert wait_for(
            lambda: GRAPH_UNAVAILABLE in client.recall("webhooks backoff", **SCOPE).degraded,
            GRAPH_STALE_S + GRAPH_PROBE_EVERY_S + 20,
        ), "a graph outage after the bootstrap was not reported"
        assert client.recall("webhooks backoff", **SCOPE).results  # still serving
        gate.open()
        assert wait_for(
            lambda: not client.recall("webhooks backoff", **SCOPE).degraded,
            GRAPH_PROBE_EVERY_S + 20,
        ), "the flag stayed after the graph returned"
    finally:
        code, output = stop(proc)
        gate.close()
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert not read_heartbeats(conn)  # removed on the way out


def test_a_replica_behind_the_change_stream_says_so(clients: Clients) -> None:
    pipeline = build_pipeline(clients)
    pipeline.ingest([turn("The audit log is kept in object storage.", 0)])
    recall = build_recall_worker(clients)
    recall.bootstrap()
    recall.lag_degraded_s = 0.3
    assert recall.heartbeat().lag_s == 0
    request = RecallRequest(query="retention policy", **SCOPE)
    assert recall.handle(request.model_dump_json().encode()).degraded == []  # type: ignore[union-attr]

    pipeline.ingest([turn("The audit log retention policy is 400 days.", 1)])  # not applied
    time.sleep(0.5)
    beat = recall.heartbeat()
    assert beat.lag_s >= 0.5 and beat.bootstrapped
    assert json.loads(clients.redis.get(heartbeat_key(recall.name)))["lag_s"] == beat.lag_s  # type: ignore[arg-type]
    behind = recall.handle(request.model_dump_json().encode())
    assert behind is not None and CHANGE_STREAM_LAG in behind.degraded
    assert recall.counters.degraded[CHANGE_STREAM_LAG] == 1

    assert recall.apply_pending_changes(block_ms=None) >= 1
    assert recall.heartbeat().lag_s == 0
    caught_up = recall.handle(request.model_dump_json().encode())
    assert caught_up is not None and caught_up.degraded == [] and caught_up.results


def test_sigterm_loses_no_popped_request(clients: Clients) -> None:
    conn = clients.redis
    build_pipeline(clients).ingest([turn("The cache warms up from the CDN at boot.", 0)])
    # An internal error prints its traceback: this test once failed under load with
    # "internal error: BufferError", not reproduced since; the next one says where.
    proc = start_worker("recall", worker_env(clients, TURNGRAPH_TRACEBACK="1"))
    requests = [
        RecallRequest(
            query="cache warm up",
            request_id=f"r{i}",
            reply_to=f"turngraph:recall:reply:r{i}",
            **SCOPE,
        )
        for i in range(200)
    ]
    signalled = False
    try:
        assert wait_for(lambda: read_heartbeats(conn), 90)
        key = clients.settings.recall_requests_key
        for request in requests:
            conn.rpush(key, request.model_dump_json())
            if request.request_id == "r20":
                proc.send_signal(signal.SIGTERM)  # mid-stream
                signalled = True
    finally:
        code, output = stop(proc, signalled=signalled)
    assert code == 0, output[-3000:]
    left = conn.llen(clients.settings.recall_requests_key)
    answered = sum(conn.exists(str(r.reply_to)) for r in requests)
    assert answered >= 1
    assert answered + left == len(requests)  # each popped request was answered
    assert not read_heartbeats(conn)


class HeldRead:
    """The graph store's read, held after its first memory until ``release`` is set."""

    def __init__(self, store: MemorySource) -> None:
        self.store = store
        self.reading = threading.Event()
        self.release = threading.Event()
        self.records = 0

    def recallable_memories(
        self, workspaces: WorkspaceFilter | None = None
    ) -> Iterator[MemoryRecord]:
        for record in self.store.recallable_memories(workspaces):
            self.records += 1
            yield record
            self.reading.set()
            assert self.release.wait(120)


def test_a_stopped_replica_returns_only_after_its_graph_read(clients: Clients) -> None:
    """Its caller closes the graph driver next: closed under a read in flight, the
    driver's close raised BufferError (test_sigterm_loses_no_popped_request, under load)."""
    build_pipeline(clients).ingest(
        [turn(f"The cache shard {i} warms up at boot.", i) for i in range(3)]
    )
    store = build_graph_store(clients)
    assert len(list(store.recallable_memories())) >= 3
    held = HeldRead(store)
    recall = RecallWorker(
        redis_client=clients.redis,
        store=held,
        requests_key=clients.settings.recall_requests_key,
        changes_stream=clients.settings.changes_stream,
        reply_ttl_s=5,
    )
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    try:
        assert held.reading.wait(60), "the background read never started"
        recall.stop()
        thread.join(timeout=1.0)  # a negative check: it must not return meanwhile
        assert thread.is_alive(), "run() returned with the graph read in flight"
    finally:
        held.release.set()
        thread.join(timeout=60)
    assert not thread.is_alive()
    assert held.records == 2  # the read ended at the next memory, not at the graph's end
    assert not recall.feed.bootstrapped
