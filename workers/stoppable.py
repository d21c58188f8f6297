"""An RQ worker that says, after its work loop returns, whether it was asked to stop.

RQ keeps that in private attributes; its supervisor (``turngraph worker``) must tell a
stop request (SIGTERM, Ctrl-C) from a loop that ended because Redis went away.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from typing import Any

from rq import SimpleWorker


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
