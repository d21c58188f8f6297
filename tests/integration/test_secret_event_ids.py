"""Issue 26, item 4: an event id that looks like a secret is replaced by its hash before it
leaves the producer, and again in the worker (for producers that do not), counted; the
secret reaches no Redis key or value, no graph node and no log line."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
from structlog.testing import capture_logs

from tests.integration.test_secrets_never_leave import _redis_bytes
from turngraph.app import build_pipeline
from turngraph.clients import Clients
from turngraph.producers.connection import open_publisher
from turngraph.producers.consent import ConsentStore
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations
from turngraph.producers.redaction import HASHED_ID_PREFIX, contains_secret, secret_free_id
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.settings import Settings

pytestmark = pytest.mark.integration

SECRET_IDS = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8",
    "github_pat_" + "11ABCDEFG0123456789_" + "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJ",
    "sk-proj-" + "Abc123Def456Ghi789Jkl012Mno345",
    "sk-ant-" + "api03-Abc123Def456Ghi789Jkl012",
    "xoxb-1234567890-0987654321-AbCdEfGhIjKlMnOp",
    "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
]
"""Every secret shape issue 26 stored verbatim, each a valid id ([A-Za-z0-9_-]{1,128})."""

WORKSPACE = "/home/alice/ids"


def test_the_ids_look_like_secrets_and_their_hashes_do_not() -> None:
    for secret in SECRET_IDS:
        assert contains_secret(secret), secret
        hashed = secret_free_id(secret)
        assert hashed.startswith(HASHED_ID_PREFIX) and not contains_secret(hashed)
        assert secret_free_id(secret) == hashed  # stable: a resent turn stays one turn
        assert TurnEvent.model_fields["event_id"].metadata  # the pattern still applies


def _stored(clients: Clients) -> list[str]:
    records, _, _ = clients.graph.execute_query(
        "MATCH (n) RETURN properties(n) AS p", database_=clients.graph_database
    )
    return [json.dumps(record["p"], default=str) for record in records]


def test_a_secret_id_never_leaves_the_producer(
    redis_conn: redis.Redis, settings: Settings, tmp_path: Path
) -> None:
    assert settings.redis_url
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    consent = ConsentStore(settings.data_dir)
    consent.enable(hasher.workspace(WORKSPACE), settings.redis_url)
    publisher = open_publisher(settings, consent=consent.checker(settings.redis_url))
    bridge = Operations(
        hasher=hasher,
        consent=consent,
        backend=Backend(endpoint=settings.redis_url, publisher=publisher, recaller=None),
    )
    with capture_logs() as logs:
        replies = []
        for index, secret in enumerate(SECRET_IDS):
            event = {
                "event_id": secret,
                "session_id": "s",
                "workspace": WORKSPACE,
                "user": "alice",
                "turn_index": index,
                "role": "user",
                "content": f"turn {index}",
                "client": {"name": "pytest"},
            }
            replies.append(bridge.handle_line(json.dumps({"op": "publish", "event": event})))
        assert bridge.handle_line('{"op": "flush", "timeout_s": 10}')["success"]
        bridge.close()
    assert [reply["event_id"] for reply in replies] == [secret_free_id(s) for s in SECRET_IDS]
    stats = publisher.stats()
    assert (stats.enqueued, stats.ids_hashed) == (len(SECRET_IDS), len(SECRET_IDS))
    stored = [blob.decode("utf-8", "replace") for blob in _redis_bytes(redis_conn)]
    rendered = [json.dumps(entry, default=str) for entry in logs] + [json.dumps(replies)]
    for secret in SECRET_IDS:
        assert not any(secret in text for text in stored + rendered), secret[:8]
    assert sum(secret_free_id(s) in "".join(stored) for s in SECRET_IDS) == len(SECRET_IDS)


def test_the_worker_hashes_a_secret_id_a_producer_let_through(clients: Clients) -> None:
    """A producer of our own never sends one; a raw client writing jobs may. The graph,
    the change stream and the ingested markers get the hash."""
    events = [
        TurnEvent(
            event_id=secret,
            session_id="s-raw",
            workspace="w-raw",
            user="u-raw",
            turn_index=index,
            role="user",
            content=f"raw turn {index} about src/raw.py",
            occurred_at=datetime.now(UTC),
            client=ClientInfo(name="raw-client"),
        )
        for index, secret in enumerate(SECRET_IDS)
    ]
    with capture_logs() as logs:
        result = build_pipeline(clients).ingest(events)
    assert (result.turns, result.ids_hashed) == (len(SECRET_IDS), len(SECRET_IDS))
    nodes = _stored(clients)
    nodes += [blob.decode("utf-8", "replace") for blob in _redis_bytes(clients.redis)]
    rendered = [json.dumps(entry, default=str) for entry in logs]
    for secret in SECRET_IDS:
        assert not any(secret in text for text in nodes + rendered), secret[:8]
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.event_id AS id", database_=clients.graph_database
    )
    assert {r["id"] for r in records} >= {secret_free_id(s) for s in SECRET_IDS}
    assert sum(entry["event"] == "event_id_hashed" for entry in logs) == len(SECRET_IDS)
