"""The thin path end to end: bounded inbox → admission → RQ burst worker → graph → recall
reply."""

from __future__ import annotations

import json
import threading

import redis

from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker, ingest_burst
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue, Outcome, read_stats
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.recall import RecallRequest


def _queue(clients: Clients) -> BoundedQueue:
    return BoundedQueue(clients.redis, name=clients.settings.ingest_queue, max_length=100)


def _drain(clients: Clients) -> None:
    ingest_burst(clients)
    assert read_stats(clients.redis, clients.settings.ingest_queue).length == 0


def _count(clients: Clients, query: str) -> int:
    records, _, _ = clients.graph.execute_query(query, database_=clients.graph_database)
    return int(records[0][0])


def test_same_event_published_twice_leaves_one_episode(clients: Clients) -> None:
    event = turn("We moved the parser to src/parse/lexer.py on branch feat/lexer.")
    queue = _queue(clients)
    assert queue.enqueue(event) is Outcome.ENQUEUED
    _drain(clients)
    # Re-published after ingest: admission counts it as a duplicate, enqueues nothing.
    assert queue.enqueue(event) is Outcome.ENQUEUED
    _drain(clients)
    stats = read_stats(clients.redis, clients.settings.ingest_queue)
    assert (stats.published, stats.admitted, stats.duplicates) == (2, 1, 1)
    # Re-delivered anyway (at-least-once): the pipeline is idempotent.
    build_pipeline(clients).ingest([event])
    assert _count(clients, "MATCH (e:Episode) RETURN count(e)") == 1
    assert _count(clients, "MATCH (:Episode)-[m:MENTIONS]->() RETURN count(m)") == 2
    assert _count(clients, "MATCH (f:File) RETURN sum(f.mentions)") == 1


def test_published_turn_is_recalled_through_the_reply_queue(clients: Clients) -> None:
    events = [
        turn("The flaky test was a race in the cache warmer.", 0),
        turn("decision: we retry cache warm-up with jittered backoff.", 1),
        turn("Lunch plans are unrelated to the codebase.", 2),
    ]
    queue = _queue(clients)
    for event in events:
        queue.enqueue(event)
    _drain(clients)

    recall = build_recall_worker(clients)
    assert recall.bootstrap() >= 3
    server = threading.Thread(target=recall.serve_once, kwargs={"timeout_s": 5.0})
    server.start()
    client = RecallClient(
        clients.redis, requests_key=clients.settings.recall_requests_key, deadline_ms=5_000
    )
    response = client.recall(
        "how do we handle cache warm-up failures?", session_id="s1", workspace="w1", user="u1"
    )
    server.join()
    assert response.success, response.user_message
    top = response.results[0]
    assert "jittered backoff" in top.text
    assert events[1].event_id in top.source_event_ids
    assert all("Lunch" not in result.text for result in response.results[:1])
    assert response.memory_block.startswith("<memory>")
    assert "jittered backoff" in response.memory_block


def test_late_request_is_skipped_and_client_fails_open(clients: Clients) -> None:
    recall = build_recall_worker(clients)
    recall.bootstrap()
    late = RecallRequest(
        query="anything", reply_to="turngraph:recall:reply:test-late", deadline_ms=10, sent_at_ms=1
    )
    assert recall.handle(late.model_dump_json().encode()) is None
    assert recall.counters.skipped_late == 1
    assert clients.redis.llen("turngraph:recall:reply:test-late") == 0
    # No worker serving: the client returns a degraded response within its deadline.
    response = RecallClient(
        clients.redis, requests_key="turngraph:test:nobody", deadline_ms=50
    ).recall("anything")
    assert not response.success and response.degraded == ["deadline_exceeded"]


def test_malformed_request_gets_typed_error_reply(clients: Clients) -> None:
    recall = build_recall_worker(clients)
    recall.bootstrap()
    bad = {
        "reply_to": "turngraph:recall:reply:test-bad",
        "request_id": "r1",
        "query": "",
        "max_results": 3,
    }
    response = recall.handle(json.dumps(bad).encode())
    assert response is not None and response.error_code is not None
    assert response.error_code.value == "INVALID_REQUEST"
    reply = json.loads(clients.redis.lpop("turngraph:recall:reply:test-bad") or b"{}")
    assert reply["success"] is False and "query" in reply["user_message"]
    assert recall.handle(b"\xff not json") is None
    assert recall.counters.malformed == 2


def test_recall_client_fails_open_when_redis_is_down() -> None:
    dead = redis.Redis(port=1, socket_connect_timeout=0.05, socket_timeout=0.05)
    response = RecallClient(dead, deadline_ms=100).recall("anything")
    assert not response.success and response.degraded == ["redis_unavailable"]
