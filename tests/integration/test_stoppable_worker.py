"""A stop that arrived before RQ's signal handlers existed still stops the work loop."""

from __future__ import annotations

import signal

import redis
from rq import Queue

from workers.stoppable import StoppableWorker


def test_a_stop_swallowed_before_rqs_handlers_ends_the_loop(redis_conn: redis.Redis) -> None:
    queue = Queue("stoppable-test", connection=redis_conn)
    worker = StoppableWorker([queue], connection=redis_conn)
    worker.pending_stop = lambda: True  # as if the signal had landed in a fork hook
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        # Not burst: without the pending stop this loop would wait for jobs for ever.
        worker.work(burst=False, max_idle_time=30)
    finally:
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)
    assert worker.stop_requested


def test_without_a_pending_stop_the_worker_works(redis_conn: redis.Redis) -> None:
    queue = Queue("stoppable-test", connection=redis_conn)
    worker = StoppableWorker([queue], connection=redis_conn)
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        worker.work(burst=True)
    finally:
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)
    assert not worker.stop_requested
