"""An RQ worker that says, after its work loop returns, whether it was asked to stop.

RQ keeps that in private attributes (this class keeps its own); its supervisor
(``turngraph worker``) must tell a stop request (SIGTERM, Ctrl-C) from a loop that ended
because Redis went away.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Callable
from typing import Any

from rq import SimpleWorker
from rq.exceptions import StopRequested
from rq.worker import WorkerStatus

from turngraph.producers.rq_internals import scheduler_process

STOP_CHECK_S = 2
"""An idle worker's longest wait on the queue: how soon a stop whose exception was lost
is carried out (RQ's default is the worker TTL less 15 s, minutes)."""

SCHEDULER_RESEND_S = 1.0
"""How long a stopping worker waits for its scheduler process before signalling again."""

SCHEDULER_KILL_S = 10.0
"""After this long the scheduler process is killed (its locks expire on their own)."""


CONFIG_FIELD = "turngraph_config"
"""The field of RQ's worker hash (``rq:worker:<name>``) holding the configuration's hash."""


def _never() -> bool:
    return False


class StoppableWorker(SimpleWorker):
    """A :class:`rq.SimpleWorker` whose ``stop_requested`` is set by RQ's stop signals,
    and that stops even when the exception a signal raised was lost.

    ``pending_stop`` tells whether a stop was asked for before RQ's handlers existed:
    ``work()`` registers the worker and forks its scheduler before it installs them (the
    supervisor only records a stop meanwhile). RQ's own handler stops an idle worker by
    raising ``StopRequested`` wherever the main thread is, and that can be a finaliser
    (a connection pool's ``__del__``), where Python only prints it: the worker would then
    block on the queue for good. So an idle worker wakes every ``STOP_CHECK_S`` and,
    where each turn of RQ's loop begins and at every heartbeat while idle, a stop that
    was asked for but not carried out is raised again, ending the loop through RQ's own
    path and teardown.
    """

    stop_requested: bool = False
    stop_requested_at: float | None = None
    """When the first stop signal came (``time.monotonic``): RQ ignores a second one
    within a second, and so does a subclass's cold shutdown."""
    pending_stop: Callable[[], bool] = staticmethod(_never)
    config_fingerprint: str = ""
    """The hash of its configuration (``turngraph/worker_config.py``), kept in RQ's worker
    hash under ``CONFIG_FIELD`` for ``turngraph doctor`` to compare."""

    def register_birth(self) -> None:
        super().register_birth()
        if self.config_fingerprint:
            self.connection.hset(self.key, CONFIG_FIELD, self.config_fingerprint)

    @property
    def dequeue_timeout(self) -> int:
        return min(STOP_CHECK_S, super().dequeue_timeout)

    def request_stop(self, signum: Any, frame: Any) -> None:
        self.stop_requested = True
        self.stop_requested_at = time.monotonic()
        super().request_stop(signum, frame)

    def check_for_suspension(self, burst: bool) -> None:
        self._stop_if_asked()
        super().check_for_suspension(burst)

    def heartbeat(self, timeout: int | None = None, pipeline: Any = None) -> None:
        if pipeline is None and self.get_state() == WorkerStatus.IDLE:
            self._stop_if_asked()  # between two waits on the queue
        super().heartbeat(timeout, pipeline)

    def _stop_if_asked(self) -> None:
        """Idle, RQ's stop raises ``StopRequested``; busy, it lets the job finish."""
        if self.stop_requested and self.get_state() != WorkerStatus.BUSY:
            raise StopRequested()  # asked for, and its exception lost
        if self.pending_stop() and not self.stop_requested:
            self.request_stop(signal.SIGTERM, None)

    def stop_scheduler(self) -> None:
        """Stop the scheduler process RQ forked, however the signal fares.

        RQ sends it one SIGTERM and joins it without a timeout. A signal that reaches
        the child before CPython's after-fork handling is dropped (pending signals are
        cleared there, so that they are not handled in both processes), and the worker
        then waits forever (seen under load when a stop comes right after start-up).
        Here the SIGTERM is sent again every ``SCHEDULER_RESEND_S`` and the child is
        killed after ``SCHEDULER_KILL_S``; a scheduler holds nothing that a kill loses.
        """
        process = scheduler_process(self)
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
