"""Publisher against a real Valkey: delivery, and Redis stopped and restarted mid-run."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq import Queue

from tests.support.turn_factory import make_turn
from turngraph.embedded import RedisServer
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.connection import open_publisher
from turngraph.producers.publisher import Publisher
from turngraph.schemas.turn_event import MAX_CONTENT_CHARS, TurnEvent
from turngraph.settings import Settings
from turngraph.workers.ingest.admission import Admission

pytestmark = pytest.mark.integration

MIN_BACKOFF_MS = 50
"""The sender's shortest back-off between reconnects in the outage test."""


def test_published_events_become_queued_jobs(redis_conn: redis.Redis, settings: Settings) -> None:
    with open_publisher(settings, max_queue_length=1000) as pub:
        for i in range(300):
            assert pub.publish(make_turn(i))
        pub.publish(make_turn(0))  # a duplicate, found at admission (its batch job waits)
        assert pub.flush(timeout_s=10)
        stats = pub.stats()
    assert (stats.enqueued, stats.duplicates, stats.sent) == (301, 0, 301)
    shared = read_stats(redis_conn, settings.ingest_queue)
    assert (shared.length, shared.published, shared.duplicates) == (301, 301, 0)
    admission = Admission(redis_conn, Queue(settings.ingest_queue, connection=redis_conn))
    while admission.admit_all():
        pass
    shared = read_stats(redis_conn, settings.ingest_queue)
    # the first copy waits in a batch job (admitted, not yet ingested): a duplicate
    assert (shared.length, shared.admitted, shared.duplicates) == (0, 300, 1)
    assert shared.published == shared.enqueued + shared.duplicates


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "own-redis")
    server.start()
    yield server
    server.stop()


def _wait_until(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.01)  # polling an observable condition of another thread, with a deadline
    return False


def test_redis_stopped_mid_run_publish_never_waits_and_events_flow_after(
    own_redis: RedisServer,
) -> None:
    """Redis killed mid-run: publish() keeps returning at once and raises nothing, and
    every event reaches the queue once Redis is back. "At once" is checked against what a
    caller-side wait would cost (the sender's shortest back-off, set to 50 ms here), not
    against the SPEC's 1 ms p99: that is a speed target, measured by ``python -m
    bench.publish`` (``down_p99_ms``); a CI run at load 16 saw 1.5 ms here, one at load 8
    11.5 ms (a 10 ms back-off was too close to a loaded machine's scheduling)."""
    pub = Publisher(
        redis_url=own_redis.url,
        max_queue_length=10_000,
        buffer_size=5_000,
        min_backoff_ms=MIN_BACKOFF_MS,
        max_backoff_ms=200,
    )
    timings: list[float] = []

    def publish_range(start: int, stop: int) -> None:
        for i in range(start, stop):
            t0 = time.perf_counter()
            assert pub.publish(make_turn(i)) is True
            timings.append(time.perf_counter() - t0)

    # `appendfsync everysec` (the default) may lose the last second of writes to a
    # SIGKILL; this test is about the publisher, so every write is made durable.
    with redis.Redis.from_url(own_redis.url) as admin:
        admin.config_set("appendfsync", "always")
    publish_range(0, 200)
    assert pub.flush(timeout_s=10)
    own_redis.kill()  # no clean shutdown
    publish_range(200, 300)  # before the sender has noticed
    assert _wait_until(lambda: not pub.redis_available, 5)
    publish_range(300, 1200)  # while it knows Redis is gone
    assert pub.flush(timeout_s=0.05) is False  # nowhere to go
    own_redis.start()  # same port, same data folder (AOF)
    assert pub.flush(timeout_s=15)
    stats = pub.close()

    conn = redis.Redis.from_url(own_redis.url)
    shared = read_stats(conn, "turngraph-ingest")
    assert shared.length == 1200
    assert stats.send_errors >= 1 and stats.dropped_local == 0
    assert stats.enqueued + stats.duplicates == 1200  # a send cut by the kill may repeat
    timings.sort()
    assert timings[int(len(timings) * 0.99)] < MIN_BACKOFF_MS / 1000, timings[-10:]


def test_the_sender_thread_survives_an_unexpected_error(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    pub = open_publisher(settings, min_backoff_ms=1, max_backoff_ms=5)
    real_send = pub._sender.send
    calls = []

    def flaky_send(*args: object) -> None:
        calls.append(1)
        if len(calls) == 1:
            raise TypeError("a bug in the sender")
        real_send(*args)  # type: ignore[arg-type]

    pub._sender.send = flaky_send  # type: ignore[method-assign]
    pub.publish(make_turn(0))
    assert pub.flush(timeout_s=10)
    assert pub.close().enqueued == 1 and len(calls) >= 2


def test_a_turn_redaction_grows_past_its_limit_is_sent_truncated_and_counted(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    grows = "pwd=abc "
    event = make_turn(0, content=(grows * MAX_CONTENT_CHARS)[:MAX_CONTENT_CHARS])
    with open_publisher(settings, max_queue_length=10) as pub:
        assert pub.publish(event)
        assert pub.flush(timeout_s=10)
        stats = pub.stats()
    assert (stats.enqueued, stats.failed, stats.truncated) == (1, 0, 1)
    (raw,) = redis_conn.lrange(f"turngraph:inbox:{settings.ingest_queue}", 0, -1)
    sent = TurnEvent.model_validate_json(raw)
    assert len(sent.content) <= MAX_CONTENT_CHARS and "abc" not in sent.content
