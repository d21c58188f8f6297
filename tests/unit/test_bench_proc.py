"""bench/proc.py's per-thread CPU: what bench.ingest reads the graph server's JIT with."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from bench.proc import ThreadsClock, threads_cpu_seconds


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def test_only_the_named_threads_are_counted() -> None:
    own = Path("/proc/thread-self/comm").read_text().strip()
    clock = ThreadsClock(os.getpid(), (own,))
    clock.start()
    _spin(0.2)  # this thread, named as the process
    clock.sample()
    assert clock.seconds >= 0.1
    assert threads_cpu_seconds(os.getpid(), ("no such thread",)) == {}


def test_a_thread_that_ended_keeps_the_time_sampled_before() -> None:
    done = threading.Event()
    ready = threading.Event()

    def work() -> None:
        _spin(0.3)
        ready.set()
        done.wait(5)

    # threads started by Python are named as the process too; compare with none
    own = Path("/proc/thread-self/comm").read_text().strip()
    clock = ThreadsClock(os.getpid(), (own,))
    clock.start()
    thread = threading.Thread(target=work)
    thread.start()
    ready.wait(5)
    clock.sample()
    sampled = clock.seconds
    done.set()
    thread.join()
    clock.sample()  # the thread is gone: its time stays counted
    assert sampled >= 0.2
    assert clock.seconds >= sampled
