"""How long-running commands and their children start and stop.

Children die with their parent: the parent-death signal is set in each child, and since
the kernel ties it to the *thread* that forked, :func:`popen_tied_to_process` forks from
the main thread or from one spawner thread that lives as long as the process; a child
that forks (RQ's scheduler) does not inherit it, so :func:`forks_die_with_this_process`
sets it in every fork. SIGTERM and SIGINT stop every long-running command the same way,
handlers installed explicitly (a background job inherits SIGINT ignored).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import queue
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from types import FrameType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported where used: every command imports this module at its start
    import subprocess
    from concurrent.futures import Future

__all__ = [
    "STOP_SIGNALS", "StopSignal", "defer_stops", "exit_on_signals", "forks_die_with_this_process",
    "parent_death_preexec", "pause", "popen_tied_to_process", "raise_if_stopping",
    "stop_on_signals", "stop_was_requested", "stops_held", "wait_for_stop",
]  # fmt: skip

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)
"""The signals every long-running command stops on."""

_PR_SET_PDEATHSIG = 1
"""From <linux/prctl.h>."""


def _load_prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    # The running program's own symbols include the C library's (no ``find_library``: it
    # runs ``ldconfig`` in a subprocess, at every command's start-up).
    prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    return prctl


_PRCTL = _load_prctl()  # resolved here: the child of a fork must not load libraries


def parent_death_preexec(
    death_signal: signal.Signals = signal.SIGTERM, umask: int | None = None
) -> Callable[[], None]:
    """A ``preexec_fn`` for ``subprocess.Popen``: the child gets ``death_signal`` when the
    thread that started it ends (the process, for children started from the main thread),
    and runs with ``umask`` if given. Start children through
    :func:`popen_tied_to_process` unless the caller is the main thread.

    If the parent is already gone by the time the child runs this, the child ends itself.
    Elsewhere than Linux only the umask applies (the parent's ``finally`` blocks remain).
    """
    parent = os.getpid()
    prctl = _PRCTL

    def preexec() -> None:
        if umask is not None:
            os.umask(umask)
        if prctl is not None:
            _die_with(prctl, parent, death_signal)

    return preexec


def _die_with(prctl: Callable[..., int], parent: int, death_signal: signal.Signals) -> None:
    """In a child: ``death_signal`` when ``parent`` dies, now if it already has (between
    the fork and this call)."""
    prctl(_PR_SET_PDEATHSIG, int(death_signal), 0, 0, 0)
    if os.getppid() != parent:
        os.kill(os.getpid(), death_signal)


def forks_die_with_this_process(death_signal: signal.Signals = signal.SIGKILL) -> None:
    """Every process this one forks from now on (not ``exec``: see
    :func:`popen_tied_to_process`) gets ``death_signal`` when this process dies.

    For a worker's RQ scheduler: RQ forks it from the worker's main thread, and the
    kernel clears the parent-death signal in a fork, so a worker killed with SIGKILL
    left its scheduler running, holding the scheduler locks no other worker could then
    take. SIGKILL by default: a scheduler holds nothing a kill loses (its locks expire).
    """
    prctl = _PRCTL
    if prctl is None:
        return
    forking = [0]

    def before() -> None:
        forking[0] = os.getpid()

    os.register_at_fork(
        before=before, after_in_child=lambda: _die_with(prctl, forking[0], death_signal)
    )


class _Spawner:
    """One daemon thread that forks children for other threads and never ends before the
    process does, so a parent-death signal set in its children fires only when the
    process dies. A forked copy of this process starts a spawner of its own."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner = 0
        self._requests: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = (
            queue.SimpleQueue()
        )

    def _serve(self) -> None:
        while True:
            call, future = self._requests.get()
            if not future.set_running_or_notify_cancel():
                continue
            try:
                future.set_result(call())
            except BaseException as error:  # handed to the caller's thread
                future.set_exception(error)

    def run(self, call: Callable[[], Any]) -> Any:
        with self._lock:
            if self._owner != os.getpid():  # first use, or a fork left the thread behind
                self._owner = os.getpid()
                self._requests = queue.SimpleQueue()
                thread = threading.Thread(target=self._serve, name="spawner", daemon=True)
                thread.start()
        from concurrent.futures import Future

        future: Future[Any] = Future()
        self._requests.put((call, future))
        return future.result()


_SPAWNER = _Spawner()


def popen_tied_to_process(
    argv: Sequence[str],
    *,
    death_signal: signal.Signals = signal.SIGTERM,
    umask: int | None = None,
    **popen_kwargs: Any,
) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **popen_kwargs)`` whose child gets ``death_signal`` when
    this *process* dies (also by SIGKILL), whichever thread calls it: a thread other than
    the main one hands the fork to the spawner thread, which outlives every caller."""
    import subprocess

    preexec = parent_death_preexec(death_signal, umask)

    def start() -> subprocess.Popen[bytes]:
        return subprocess.Popen(list(argv), preexec_fn=preexec, **popen_kwargs)

    if threading.current_thread() is threading.main_thread():
        return _holding_stops(start)
    proc: subprocess.Popen[bytes] = _SPAWNER.run(start)
    return proc


def _holding_stops(start: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
    """``start()`` with stop signals held. One raised between the fork and ``Popen``'s
    return (the child's pre-exec hook and exec run meanwhile: long on a loaded machine)
    would lose the child, which the caller's clean-up then never stops (seen: ``up`` said
    "stopped" and a server of its data folder outlived it). A held signal goes to the
    previous handler once the child is known; if that raises, the child is killed (it has
    done nothing yet) and reaped."""
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    if any(handler is None for handler in previous.values()):
        return start()  # a handler installed outside Python: leave it alone
    held: list[int] = []
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, _frame: held.append(signum))
    try:
        proc = start()
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
    try:
        _deliver(held, previous)
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    return proc


@contextlib.contextmanager
def stops_held() -> Iterator[None]:
    """Stop signals only recorded while the body runs, then handed to the handler that was
    there before (which raises :class:`StopSignal` as usual). For a library call that a
    :class:`StopSignal` raised in its middle leaves half-done: the neo4j driver mid-message
    was seen to log a dropped connection and to turn the stop into a ``BufferError``. Only
    in the main thread (where signals are delivered) and with Python-level handlers."""
    previous = {sig: signal.getsignal(sig) for sig in STOP_SIGNALS}
    if threading.current_thread() is not threading.main_thread() or any(
        handler is None for handler in previous.values()
    ):
        yield
        return
    held: list[int] = []
    for sig in STOP_SIGNALS:
        signal.signal(sig, lambda signum, _frame: held.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        _deliver(held, previous)


def _deliver(held: list[int], previous: dict[signal.Signals, Any]) -> None:
    """Held stop signals, in order, to the handlers that were there before."""
    for signum in held:
        handler = previous[signal.Signals(signum)]
        if callable(handler):
            handler(signum, None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(signum)


class StopSignal(KeyboardInterrupt):
    """Raised in the main thread by SIGTERM or SIGINT: unwinds ``with`` blocks and
    ``finally`` clauses, so whatever was started is stopped."""


_STOP = threading.Event()
"""Set by the first stop signal; stays set."""

_STOP_NAME: list[str] = []
"""The stop signals' names, first first (what :func:`raise_if_stopping` says)."""


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
        _STOP_NAME.append(signal.Signals(signum).name)
        _STOP.set()
        raise StopSignal(signal.Signals(signum).name)

    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, handle)
    _quiet_lost_stops()


def defer_stops() -> None:
    """From now on a SIGTERM or SIGINT is only recorded (:func:`stop_was_requested`), never
    raised: for the moments before a library installs its own handlers and is told of
    a recorded stop (RQ's ``work()`` registers the worker, subscribes and forks its
    scheduler first; see ``workers/rq_adapter.py``). An exception raised in there can land
    in the middle of a half-built object, such as a multiprocessing finaliser that then
    prints a traceback when it is collected."""
    installer = os.getpid()

    def record(signum: int, _frame: FrameType | None) -> None:
        if not _in_forked_child(installer, signum):
            _STOP_NAME.append(signal.Signals(signum).name)
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
            _log().info("stop_signal_deferred", where=type(unraisable.object).__name__)
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
        raise StopSignal(_STOP_NAME[0] if _STOP_NAME else "stop requested")


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
        _log().info("stopped", signal=signal.Signals(signum).name)
        try:
            cleanup()
        finally:
            sys.stdout.flush()
            os._exit(0)

    for stop_signal in STOP_SIGNALS:
        signal.signal(stop_signal, handle)


def _log() -> Any:
    """structlog, imported when there is something to log: this module is imported by
    every command before anything else (``turngraph.cli.main``)."""
    import structlog

    return structlog.get_logger(__name__)


def _already_stopping(signum: int) -> None:
    _log().warning("stop_in_progress", signal=signal.Signals(signum).name)
