"""An RQ worker that says, after its work loop returns, whether it was asked to stop.

RQ keeps that in private attributes; its supervisor (``turngraph worker``) must tell a
stop request (SIGTERM, Ctrl-C) from a loop that ended because Redis went away.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from rq import SimpleWorker

SCHEDULER_RESEND_S = 1.0
"""How long a stopping worker waits for its scheduler process before signalling again."""

SCHEDULER_KILL_S = 10.0
"""After this long the scheduler process is killed (its locks expire on their own)."""


def _never() -> bool:
    return False


class StoppableWorker(SimpleWorker):
    """A :class:`rq.SimpleWorker` whose ``stop_requested`` is set by RQ's stop signals.

    ``pending_stop`` tells whether a stop was asked for before RQ's handlers existed:
    ``work()`` registers the worker and forks its scheduler before it installs them, and
    a signal in that window can be swallowed (it lands in a fork hook). The supervisor
    sets it to its own record of stop signals; it is checked where each turn of RQ's loop
    begins (``check_for_suspension``), so the stop ends the loop through RQ's own path
    and teardown.
    """

    stop_requested: bool = False
    pending_stop: Callable[[], bool] = staticmethod(_never)

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stop_requested = True
        super().request_stop(signum, frame)

    def check_for_suspension(self, burst: bool) -> None:
        if self.pending_stop() and not self.stop_requested:
            self.request_stop(signal.SIGTERM, None)  # idle: raises RQ's StopRequested
        super().check_for_suspension(burst)

    def stop_scheduler(self) -> None:
        """Stop the scheduler process RQ forked, however the signal fares.

        RQ sends it one SIGTERM and joins it without a timeout. A signal that reaches
        the child before CPython's after-fork handling is dropped (pending signals are
        cleared there, so that they are not handled in both processes), and the worker
        then waits forever (seen under load when a stop comes right after start-up).
        Here the SIGTERM is sent again every ``SCHEDULER_RESEND_S`` and the child is
        killed after ``SCHEDULER_KILL_S``; a scheduler holds nothing that a kill loses.
        """
        process = self.scheduler._process if self.scheduler is not None else None
        if process is None or not process.pid or process.exitcode is not None:
            return
        deadline = time.monotonic() + SCHEDULER_KILL_S
        while process.exitcode is None and time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGTERM)
            process.join(SCHEDULER_RESEND_S)
        if process.exitcode is None:
            self.log.warning("Worker %s: scheduler did not stop, killing it", self.name)
            with contextlib.suppress(OSError):
                os.kill(process.pid, signal.SIGKILL)
            process.join()
