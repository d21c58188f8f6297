"""The chaos bench waits for a drain as long as turns are still being ingested: a fixed
300 s cut off Neo4j runs still ingesting at load 30-40 and called them stuck."""

from __future__ import annotations

import itertools
import time

from bench.chaos import wait_while_progressing


def test_a_slow_drain_that_keeps_ingesting_is_waited_for() -> None:
    ingested = itertools.count()
    checks = itertools.count()
    started = time.monotonic()
    drained = wait_while_progressing(
        lambda: next(checks) > 8,  # drains after ~2 s (polled every 0.25 s), ten stall periods
        lambda: next(ingested),
        stall_s=0.2,
        total_s=30,
        poll_s=0.05,
    )
    assert drained and time.monotonic() - started > 0.2


def test_a_stalled_drain_is_given_up_after_the_stall_period() -> None:
    started = time.monotonic()
    drained = wait_while_progressing(lambda: False, lambda: 7, stall_s=0.3, total_s=30, poll_s=0.05)
    assert not drained and 0.3 <= time.monotonic() - started < 5
