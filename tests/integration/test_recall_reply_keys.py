"""The recall worker answers on reply keys only: a foreign ``reply_to`` touches no key."""

from __future__ import annotations

import json

import pytest
import redis

from tests.support.turns import turn
from turngraph.app import build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.schemas.keys import CHANGES_STREAM

pytestmark = pytest.mark.integration


def _snapshot(clients: Clients) -> dict[str, tuple[bytes, int, int]]:
    conn = clients.redis
    out = {}
    for key in conn.scan_iter(count=1000):
        kind = conn.type(key)
        size = conn.llen(key) if kind == b"list" else conn.xlen(key) if kind == b"stream" else 0
        out[key.decode()] = (kind, conn.ttl(key), size)
    return out


@pytest.mark.parametrize(
    "reply_to",
    [
        "rq:queue:turngraph-ingest",
        CHANGES_STREAM,
        "turngraph:recall:reply:",
        "turngraph:recall:reply:a:b",
        "turngraph:recall:reply:x\r\nDEL y",
        "turngraph:recall:requests",
    ],
)
def test_a_request_with_a_foreign_reply_to_is_refused_and_touches_no_key(
    clients: Clients, reply_to: str
) -> None:
    BoundedQueue(clients.redis, max_length=100).enqueue(turn("queued turn", 0))
    clients.redis.xadd(CHANGES_STREAM, {"kind": "probe"})
    recall = build_recall_worker(clients)
    recall.bootstrap()
    before = _snapshot(clients)
    for request in (
        {"request_id": "r1", "reply_to": reply_to, "query": "anything"},
        {"request_id": "r2", "reply_to": reply_to, "query": ""},  # invalid: no error reply
    ):
        assert recall.handle(json.dumps(request).encode()) is None
    assert recall.counters.refused_reply_to == 2 and recall.counters.answered == 0
    assert _snapshot(clients) == before


def test_a_request_on_a_proper_reply_key_is_answered(clients: Clients) -> None:
    recall = build_recall_worker(clients)
    recall.bootstrap()
    key = "turngraph:recall:reply:abc-123"
    request = {"request_id": "abc-123", "reply_to": key, "query": "anything"}
    assert recall.handle(json.dumps(request).encode()) is not None
    assert clients.redis.llen(key) == 1 and 0 < clients.redis.ttl(key) <= 30


def test_a_reply_redis_refuses_is_answered_and_counted_lost(clients: Clients) -> None:
    # Every popped request is counted: one answered whose reply Redis refused is in
    # answered and in replies_lost (turngraph_requests_total), and the error is raised.
    recall = build_recall_worker(clients)
    recall.bootstrap()
    key = "turngraph:recall:reply:abc-124"
    clients.redis.set(key, "not a list")
    request = {"request_id": "abc-124", "reply_to": key, "query": "anything"}
    with pytest.raises(redis.ResponseError):
        recall.handle(json.dumps(request).encode())
    assert recall.counters.answered == 1 and recall.counters.replies_lost == 1
