"""A stop that arrived before RQ's signal handlers existed still stops the work loop."""

from __future__ import annotations

import signal
import threading
import time

import redis
from rq import Queue

from turngraph.workers import rq_adapter as stoppable
from turngraph.workers.rq_adapter import StoppableWorker


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


def test_a_stop_whose_exception_was_lost_ends_an_idle_loop(redis_conn: redis.Redis) -> None:
    """RQ's handler stops an idle worker by raising StopRequested wherever the main thread
    is; raised in a finaliser it is only printed. The worker still stops, at its next
    wake-up (``STOP_CHECK_S``), instead of waiting on the queue until ``max_idle_time``."""
    queue = Queue("stoppable-test", connection=redis_conn)
    worker = StoppableWorker([queue], connection=redis_conn)
    assert worker.dequeue_timeout == stoppable.STOP_CHECK_S
    # What StoppableWorker.request_stop leaves behind when RQ's exception goes nowhere.
    timer = threading.Timer(0.5, lambda: setattr(worker, "stop_requested", True))
    previous = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    timer.start()
    try:
        worker.work(burst=False, max_idle_time=60)
    finally:
        timer.cancel()
        for stop_signal, handler in previous.items():
            signal.signal(stop_signal, handler)
    assert time.monotonic() - started < 30  # 60 without the check (max_idle_time)
