"""An RQ worker that says, after its work loop returns, whether it was asked to stop.

RQ keeps that in private attributes; its supervisor (``turngraph worker``) must tell a
stop request (SIGTERM, Ctrl-C) from a loop that ended because Redis went away.
"""

from __future__ import annotations

from typing import Any

from rq import SimpleWorker


class StoppableWorker(SimpleWorker):
    """A :class:`rq.SimpleWorker` whose ``stop_requested`` is set by RQ's stop signals."""

    stop_requested: bool = False

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stop_requested = True
        super().request_stop(signum, frame)
