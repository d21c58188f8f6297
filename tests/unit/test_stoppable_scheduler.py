"""A stopping worker ends its scheduler process even when a SIGTERM is lost (one that
reaches the forked child before CPython's after-fork handling is dropped) or ignored:
real forked processes, RQ's own ``ForkProcess`` context."""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from types import SimpleNamespace
from typing import Any

import pytest

from turngraph.workers import rq_adapter as stoppable
from turngraph.workers.rq_adapter import StoppableWorker

FORK = multiprocessing.get_context("fork")


def _scheduler_like(ready: Any, ignored: int) -> None:
    """Ignore the first ``ignored`` SIGTERMs (a lost one looks the same), then stop."""
    seen = 0

    def handle(signum: int, frame: Any) -> None:
        nonlocal seen
        seen += 1
        if seen > ignored:
            raise SystemExit(0)

    signal.signal(signal.SIGTERM, handle)
    ready.set()
    while True:
        time.sleep(0.05)


def _worker_with_scheduler(ignored: int) -> tuple[Any, Any]:
    ready = FORK.Event()
    process = FORK.Process(target=_scheduler_like, args=(ready, ignored), daemon=True)
    process.start()
    assert ready.wait(10)
    worker = SimpleNamespace(
        scheduler=SimpleNamespace(_process=process), log=logging.getLogger("t"), name="w"
    )
    return worker, process


def test_a_lost_stop_signal_is_sent_again() -> None:
    worker, process = _worker_with_scheduler(ignored=1)
    started = time.monotonic()
    StoppableWorker.stop_scheduler(worker)
    assert process.exitcode == 0  # it stopped on the second SIGTERM, by its own handler
    assert time.monotonic() - started < stoppable.SCHEDULER_KILL_S


def test_a_scheduler_that_never_stops_is_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stoppable, "SCHEDULER_KILL_S", 1.5)
    monkeypatch.setattr(stoppable, "SCHEDULER_RESEND_S", 0.2)
    worker, process = _worker_with_scheduler(ignored=10_000)
    StoppableWorker.stop_scheduler(worker)
    assert process.exitcode == -signal.SIGKILL


def test_a_stopped_scheduler_is_not_signalled_again() -> None:
    worker, process = _worker_with_scheduler(ignored=0)
    StoppableWorker.stop_scheduler(worker)
    assert process.exitcode == 0
    StoppableWorker.stop_scheduler(worker)  # RQ's teardown calls it a second time: no-op
    assert process.exitcode == 0
