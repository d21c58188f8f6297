"""How long-running commands and their children start and stop.

- Children die with their parent: Linux's parent-death signal (``PR_SET_PDEATHSIG``) is
  set in the child before it runs its program, so a ``kill -9`` of ``turngraph up`` or
  ``turngraph services`` leaves no server or worker behind.
- SIGTERM and SIGINT stop every long-running command the same way, however it was
  started: a background job of a script inherits SIGINT *ignored*, so the handlers are
  installed explicitly rather than relying on Python's default Ctrl-C.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import structlog

log = structlog.get_logger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals every long-running command stops on."""

_PR_SET_PDEATHSIG = 1
"""From <linux/prctl.h>."""


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
    prctl: Callable[..., int] = libc.prctl
    return prctl


_PRCTL = _load_prctl()  # resolved here: the child of a fork must not load libraries


def parent_death_preexec(
    death_signal: signal.Signals = signal.SIGTERM, umask: int | None = None
) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``death_signal`` when the
    thread that started it ends (the process, for children started from the main thread),
    and runs with ``umask`` if given.

    If the parent is already gone by the time the child runs this, the child ends itself.
    Elsewhere than Linux only the umask applies (the parent's ``finally`` blocks remain).
    """
    parent = os.getpid()
    prctl = _PRCTL

    def preexec() -> None:
        if umask is not None:
            os.umask(umask)
        if prctl is not None:
            prctl(_PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
            if os.getppid() != parent:  # the parent died between fork and prctl
                os.kill(os.getpid(), death_signal)

    return preexec


class StopSignal(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGINT: unwinds ``with`` blocks and
    ``finally`` clauses, so whatever was started is stopped."""


_STOP = threading.Event()
"""Set by the first stop signal; stays set."""


def stop_on_signals() -> None:
    """The first SIGTERM or SIGINT raises :class:`StopSignal`; further ones while stopping
    are logged and otherwise ignored, so the clean-up runs to its end.

    Installs the handlers even where SIGINT was inherited as ignored (a background job).
    An exception raised by a signal handler can land where Python only prints it (a
    fork hook, a finaliser), so the request is also kept: polling loops call
    :func:`raise_if_stopping` and the serving wait is :func:`wait_for_stop`.
    """

    installer = os.getpid()

    def handle(signum: int, _frame: FrameType | None) -> None:
        if _in_forked_child(installer, signum):
            return
        if _STOP.is_set():
            _already_stopping(signum)
            return
        _STOP.set()
        raise StopSignal(signal.Signals(signum).name)

    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, handle)
    _quiet_lost_stops()


def defer_stops() -> None:
    """From now on a SIGTERM or SIGINT is only recorded (:func:`stop_was_requested`), never
    raised: for the moments before a library installs its own handlers and is told of
    a recorded stop (RQ's ``work()`` registers the worker, subscribes and forks its
    scheduler first; see ``workers/stoppable.py``). An exception raised in there can land
    in the middle of a half-built object, such as a multiprocessing finaliser that then
    prints a traceback when it is collected."""
    installer = os.getpid()

    def record(signum: int, _frame: FrameType | None) -> None:
        if not _in_forked_child(installer, signum):
            _STOP.set()  # nothing else here: a log line could re-enter a stderr write

    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, record)


def _in_forked_child(installer: int, signum: int) -> bool:
    """In a forked child (RQ's scheduler) before it set its own handlers, a stop ends it
    the way it would have by default, without unwinding the parent's code."""
    if os.getpid() == installer:
        return False
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return True


def _quiet_lost_stops() -> None:
    """A :class:`StopSignal` raised where Python cannot propagate it (an at-fork hook such
    as logging's lock release, a finaliser) reaches ``sys.unraisablehook``, which would
    print a traceback: the stop is recorded all the same (:data:`_STOP`), so it becomes
    one log event instead. Anything else goes to the hook that was there before."""
    previous = sys.unraisablehook
    if getattr(previous, "_turngraph_quiet_stops", False):
        return

    def hook(unraisable: Any) -> None:
        if isinstance(unraisable.exc_value, StopSignal):
            log.info("stop_signal_deferred", where=type(unraisable.object).__name__)
            return
        previous(unraisable)

    hook._turngraph_quiet_stops = True  # type: ignore[attr-defined]
    sys.unraisablehook = hook


def stop_was_requested() -> bool:
    """Whether a stop signal arrived (raised, or swallowed where Python could not raise it)."""
    return _STOP.is_set()


def raise_if_stopping() -> None:
    """For start-up loops: raise :class:`StopSignal` if a stop was asked for."""
    if _STOP.is_set():
        raise StopSignal("stop requested")


def pause(seconds: float) -> None:
    """Sleep up to ``seconds``; raise :class:`StopSignal` as soon as a stop is recorded
    (also one that was only recorded, see :func:`defer_stops`)."""
    _STOP.wait(seconds)
    raise_if_stopping()


def wait_for_stop() -> None:
    """Block until a stop signal (it raises :class:`StopSignal` here, or was raised
    elsewhere and lost: then this returns)."""
    _STOP.wait()


def exit_on_signals(cleanup: Callable[[], None]) -> None:
    """SIGTERM and SIGINT run ``cleanup`` and end the process with status 0 at once.

    For servers whose reads cannot be interrupted: an asyncio server reading stdin in a
    worker thread waits for that read to return before it unwinds, which is never while
    the client keeps the pipe open.
    """

    def handle(signum: int, _frame: FrameType | None) -> None:
        if _STOP.is_set():
            _already_stopping(signum)
            return
        _STOP.set()
        log.info("stopped", signal=signal.Signals(signum).name)
        try:
            cleanup()
        finally:
            sys.stdout.flush()
            os._exit(0)

    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, handle)


def _already_stopping(signum: int) -> None:
    log.warning("stop_in_progress", signal=signal.Signals(signum).name)
