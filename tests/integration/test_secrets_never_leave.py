"""The secrets corpus published through the producer: none reaches Redis or a log line."""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import pytest
import redis
from structlog.testing import capture_logs

from turngraph.producers.connection import open_publisher
from turngraph.producers.consent import ConsentStore
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings

pytestmark = pytest.mark.integration

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "data" / "secrets_corpus.jsonl")
    .read_text()
    .splitlines()
]
RAW_WORKSPACE = "/home/alice/clients/acme-secret-project"


def _redis_bytes(conn: redis.Redis) -> list[bytes]:
    """Every key name and every value stored, job data decompressed."""
    out: list[bytes] = []
    for key in conn.scan_iter(count=1000):
        out.append(key)
        kind = conn.type(key).decode()
        if kind == "string":
            out.append(conn.get(key) or b"")
        elif kind == "hash":
            for field, value in conn.hgetall(key).items():
                out.append(field)
                try:
                    out.append(zlib.decompress(value))
                except zlib.error:
                    out.append(value)
        elif kind == "list":
            out.extend(conn.lrange(key, 0, -1))
        elif kind == "set":
            out.extend(conn.smembers(key))
        elif kind == "zset":
            out.extend(member for member, _ in conn.zrange(key, 0, -1, withscores=True))
        elif kind == "stream":
            for _, fields in conn.xrange(key):
                out.extend([*fields.keys(), *fields.values()])
    return out


def _leaks(secret: str, haystacks: list[str]) -> list[str]:
    width = min(12, len(secret))
    parts = {secret[i : i + width] for i in range(len(secret) - width + 1)}
    return [part for part in parts for text in haystacks if part in text]


def test_no_secret_reaches_redis_or_the_logs(
    redis_conn: redis.Redis, settings: Settings, tmp_path: Path
) -> None:
    assert settings.redis_url
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    consent = ConsentStore(settings.data_dir)
    consent.enable(hasher.workspace(RAW_WORKSPACE), settings.redis_url)
    publisher = open_publisher(settings, consent=consent.checker(settings.redis_url))
    bridge = Operations(
        hasher=hasher,
        consent=consent,
        backend=Backend(endpoint=settings.redis_url, publisher=publisher, recaller=None),
    )
    with capture_logs() as logs:
        for index, row in enumerate(CORPUS):
            event = {
                "session_id": "alice-laptop-session",
                "workspace": RAW_WORKSPACE,
                "user": "alice@example.com",
                "turn_index": index,
                "role": "user" if index % 2 else "assistant",
                "content": row["content"],
                "client": {"name": "pytest"},
                "tags": [row["kind"]],
            }
            reply = bridge.handle_line(json.dumps({"op": "publish", "event": event}))
            assert reply["success"], reply
        # malformed input carrying a secret must not echo it either
        bad = bridge.handle_line(
            json.dumps({"op": "publish", "event": {"content": CORPUS[0]["secret"]}})
        )
        assert not bad["success"]
        assert bridge.handle_line('{"op": "flush", "timeout_s": 10}')["success"]
        bridge.close()
    stats = publisher.stats()
    assert stats.enqueued == len(CORPUS)

    stored = [blob.decode("utf-8", "replace") for blob in _redis_bytes(redis_conn)]
    rendered_logs = [json.dumps(entry, default=str) for entry in logs]
    rendered_logs.append(json.dumps(bad))
    assert any("[REDACTED:" in text for text in stored)  # the turns did arrive
    for row in CORPUS:
        assert _leaks(row["secret"], stored) == [], row["kind"]
        assert _leaks(row["secret"], rendered_logs) == [], row["kind"]
    for raw in (RAW_WORKSPACE, "alice@example.com", "alice-laptop-session"):
        assert not any(raw in text for text in stored + rendered_logs)
