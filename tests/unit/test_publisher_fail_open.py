"""Publisher with nothing listening: publish never waits, never raises, drops are counted."""

from __future__ import annotations

import statistics
import time

from tests.support.turn_factory import make_turn
from turngraph.embedded.process import free_port
from turngraph.producers.publisher import Publisher

MIN_BACKOFF_MS = 5
"""The sender's shortest back-off between reconnects."""


def _dead_publisher(**kw: object) -> Publisher:
    url = f"redis://127.0.0.1:{free_port()}/0"  # nothing listens there
    return Publisher(redis_url=url, min_backoff_ms=MIN_BACKOFF_MS, max_backoff_ms=20, **kw)  # type: ignore[arg-type]


def test_publish_without_redis_never_waits_and_never_raises() -> None:
    """publish() does not wait for Redis: checked against what a wait in the caller
    would cost (the sender's back-off, 5 ms, on every call), by the median of 200 calls.
    The SPEC's 1 ms p99 is a speed target, measured by ``python -m bench.publish``. (The
    slowest call against 50 ms failed once at load 11.)"""
    pub = _dead_publisher(buffer_size=50)
    timings = []
    results = []
    for i in range(200):
        start = time.perf_counter()
        results.append(pub.publish(make_turn(i)))
        timings.append(time.perf_counter() - start)
    stats = pub.close(timeout_s=0.05)
    assert results.count(True) == 50 and results.count(False) == 150
    assert stats.published == 200 and stats.buffered == 50 and stats.dropped_local == 150
    assert stats.abandoned + stats.sent == 50 and stats.sent == 0
    assert statistics.median(timings) < MIN_BACKOFF_MS / 1000, sorted(timings)[-5:]
    assert not pub.redis_available


def test_flush_times_out_instead_of_blocking() -> None:
    pub = _dead_publisher()
    pub.publish(make_turn(0))
    start = time.monotonic()
    assert pub.flush(timeout_s=0.05) is False
    assert time.monotonic() - start < 1.0
    pub.close(timeout_s=0.01)


def test_no_consent_means_nothing_is_buffered() -> None:
    pub = _dead_publisher(consent=lambda workspace: workspace == "w_allowed")
    assert pub.publish(make_turn(0)) is False
    assert pub.publish(make_turn(1, workspace="w_allowed")) is True
    stats = pub.close(timeout_s=0.01)
    assert (stats.not_consented, stats.buffered) == (1, 1)


def test_a_broken_consent_check_counts_as_no_consent() -> None:
    def broken(workspace: str) -> bool:
        raise OSError("consent file unreadable")

    pub = _dead_publisher(consent=broken)
    assert pub.publish(make_turn(0)) is False
    assert pub.close(timeout_s=0.01).not_consented == 1


def test_publish_after_close_is_dropped_and_counted() -> None:
    pub = _dead_publisher()
    pub.close(timeout_s=0.01)
    assert pub.publish(make_turn(0)) is False
    assert pub.stats().dropped_closed == 1


def test_the_buffer_is_bounded_in_characters_too() -> None:
    pub = _dead_publisher(buffer_max_chars=25_000)
    big = "x" * 10_000
    results = [pub.publish(make_turn(i, content=big)) for i in range(5)]
    assert results == [True, True, False, False, False]
    assert pub.close(timeout_s=0.01).dropped_local == 3


def test_publishing_something_that_is_not_an_event_does_not_raise() -> None:
    pub = _dead_publisher()
    assert pub.publish({"content": "a dict"}) is False  # type: ignore[arg-type]
    assert pub.close(timeout_s=0.01).not_consented == 1
