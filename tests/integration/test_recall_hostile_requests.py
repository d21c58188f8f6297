"""Hostile recall requests, as a client in another language could push them onto the
request list: none ends the serving process, each is counted, and a request whose reply
key can be read gets a typed error naming the field (never its value)."""

from __future__ import annotations

import json
import threading

import pytest

from turngraph.app import build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.json_lines import MAX_DEPTH
from turngraph.schemas.recall import RecallResponse

pytestmark = pytest.mark.integration

REPLY = "turngraph:recall:reply:"

DEEP = (
    '{"request_id": "deep", "reply_to": "turngraph:recall:reply:deep", "query": "x", '
    '"conversation_context": ' + "[" * 100_000 + "]" * 100_000 + "}"
)
"""Deeper than the JSON parser's recursion allows (it raised ``RecursionError``)."""

SHALLOW_ENOUGH = (
    '{"request_id": "d32", "reply_to": "turngraph:recall:reply:d32", "query": "x", '
    '"conversation_context": ' + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "}"
)
"""At the depth limit: parsed, and refused by the model naming the field."""


def _raw(request_id: str, **fields: object) -> str:
    return json.dumps({"request_id": request_id, "reply_to": REPLY + request_id, **fields})


def test_no_hostile_request_ends_the_serving_loop(clients: Clients) -> None:
    recall = build_recall_worker(clients)
    recall.bootstrap()
    conn = clients.redis
    key = clients.settings.recall_requests_key
    hostile = [
        DEEP,
        '{"a": ' * 5_000 + "1" + "}" * 5_000,
        b"\xff\xfe not UTF-8",
        "{not json",
        "null",
        "[1, 2]",
        SHALLOW_ENOUGH,
        _raw("nan", query="x").replace('"query"', '"half_life_days": NaN, "query"'),
        _raw("surrogate", query="x").replace('"x"', '"\\ud800x"'),
        _raw("huge", query="y" * 5_000_000),
        _raw("typed", query=42),
    ]
    for raw in hostile:
        conn.rpush(key, raw)
    serving = threading.Thread(target=recall.run, daemon=True)
    serving.start()
    try:
        client = RecallClient(conn, requests_key=key, deadline_ms=10_000)
        answer = client.recall("anything at all")  # queued behind every hostile request
    finally:
        recall.stop()
        serving.join(timeout=15)
    assert not serving.is_alive()
    assert answer.success, answer.user_message
    assert recall.counters.answered == 1
    assert recall.counters.malformed == len(hostile)
    for request_id, field in (
        ("d32", "conversation_context"),
        ("nan", "half_life_days"),
        ("surrogate", "query"),
        ("huge", "query"),
        ("typed", "query"),
    ):
        popped = conn.lpop(REPLY + request_id)
        assert popped is not None, request_id
        refused = RecallResponse.model_validate_json(popped)
        assert refused.error_code is ErrorCode.INVALID_REQUEST
        assert refused.user_message is not None and field in refused.user_message
