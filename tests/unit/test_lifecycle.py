"""Children die with their parent (Linux parent-death signal), and a stop signal is
kept even when the exception it raised was lost."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="parent-death signals are Linux's"
)

PARENT = textwrap.dedent(
    """
    import subprocess, sys, time
    from turngraph.lifecycle import parent_death_preexec
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        preexec_fn=parent_death_preexec(umask=0o077),
    )
    print(child.pid, flush=True)
    time.sleep(600)
    """
)


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state == "Z"


def _gone_within(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.02)  # polling another process's exit
    return _gone(pid)


def test_a_child_dies_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert not _gone(child)
        assert Path(f"/proc/{child}/status").read_text().count("Umask:\t0077") == 1
        parent.kill()
        parent.wait()
        assert _gone_within(child, 10)
    finally:
        parent.kill()
        parent.wait()
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


FORKING_PARENT = textwrap.dedent(
    """
    import multiprocessing, sys, time
    from turngraph.lifecycle import forks_die_with_this_process
    if sys.argv[1] == "tied":
        forks_die_with_this_process()
    # as RQ starts a worker's scheduler: a fork from the main thread, no exec
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(600,))
    child.start()
    print(child.pid, flush=True)
    time.sleep(600)
    """
)


def _forking_parent(mode: str) -> tuple[subprocess.Popen[str], int]:
    parent = subprocess.Popen(
        [sys.executable, "-c", FORKING_PARENT, mode], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    return parent, int(parent.stdout.readline())


def test_a_forked_child_dies_with_its_parent_only_when_tied() -> None:
    """The kernel clears the parent-death signal in a fork: without the hook a killed
    worker's scheduler lived on (the untied pair shows that the test can tell)."""
    pairs = [_forking_parent("tied"), _forking_parent("untied")]
    (_, tied), (_, untied) = pairs
    try:
        assert not _gone(tied) and not _gone(untied)
        for parent, _child in pairs:
            parent.kill()
            parent.wait()
        assert _gone_within(tied, 10)
        assert not _gone(untied)
    finally:
        for parent, child in pairs:
            parent.kill()
            parent.wait()
            if not _gone(child):
                os.kill(child, signal.SIGKILL)


LOST_RAISE = textwrap.dedent(
    """
    import os, signal, sys
    from turngraph import lifecycle
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a background job inherits it
    lifecycle.stop_on_signals()
    try:
        os.kill(os.getpid(), signal.SIGINT)  # raised here ...
    except lifecycle.StopSignal:
        pass  # ... and lost, as in a fork hook
    os.kill(os.getpid(), signal.SIGTERM)  # a second signal: logged, not raised
    lifecycle.wait_for_stop()  # returns: the request was kept
    try:
        lifecycle.raise_if_stopping()
    except lifecycle.StopSignal:
        print("stopping", flush=True)
    """
)


def _run(script: str) -> subprocess.CompletedProcess[str]:
    """``script`` in a Python process of its own (signal handlers are per process)."""
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60
    )


def test_a_lost_stop_signal_is_kept() -> None:
    done = _run(LOST_RAISE)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "stopping"
    assert "stop_in_progress" in done.stdout + done.stderr  # (unconfigured structlog)


def test_a_stop_python_cannot_raise_is_quiet_and_other_errors_are_not() -> None:
    """A StopSignal landing in a finaliser or an at-fork hook prints no traceback (the stop
    is recorded anyway); any other unraisable error still does."""
    script = (
        "from turngraph.lifecycle import StopSignal, stop_on_signals\n"
        "stop_on_signals()\n"
        "class Stop:\n"
        "    def __del__(self): raise StopSignal('SIGTERM')\n"
        "class Broken:\n"
        "    def __del__(self): raise ValueError('still shown')\n"
        "s = Stop(); del s\n"
        "b = Broken(); del b\n"
    )
    done = _run(script)
    assert "StopSignal" not in done.stderr
    assert "ValueError: still shown" in done.stderr


DEFERRED = textwrap.dedent(
    """
    import multiprocessing, os, signal, time
    from turngraph import lifecycle
    lifecycle.stop_on_signals()
    lifecycle.defer_stops()  # as before RQ's work() installs its handlers
    os.kill(os.getpid(), signal.SIGTERM)  # recorded, not raised
    time.sleep(0.2)
    print("recorded" if lifecycle.stop_was_requested() else "lost", flush=True)
    # A forked child that has not set handlers of its own ends by default on a stop.
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    child.start()
    time.sleep(0.5)
    os.kill(child.pid, signal.SIGTERM)
    child.join(10)
    print("child", child.exitcode, flush=True)
    try:
        lifecycle.pause(5)  # a recorded stop ends a pause at once
    except lifecycle.StopSignal:
        print("paused stop", flush=True)
    """
)


def test_a_deferred_stop_is_recorded_and_not_raised() -> None:
    done = _run(DEFERRED)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == ["recorded", f"child {-signal.SIGTERM}", "paused stop"]
    assert "Traceback" not in done.stderr


def _sigterm_pending(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    masks = [line.split()[1] for line in status.splitlines() if line[:6] in {"SigPnd", "ShdPnd"}]
    return any(int(mask, 16) & (1 << (signal.SIGTERM - 1)) for mask in masks)


FROM_A_THREAD = textwrap.dedent(
    """
    import sys, threading, time
    from pathlib import Path
    from turngraph.embedded.process import ServerProcess
    server = ServerProcess("sleeper", ["/bin/sleep", "600"], Path(sys.argv[1]) / "sleeper.log")
    starter = threading.Thread(target=server.start, args=(lambda: True,))
    starter.start()
    starter.join()
    task = Path(f"/proc/self/task/{starter.native_id}")
    while task.exists():  # join() returns before the kernel thread has exited
        time.sleep(0.01)
    print(server.pid, flush=True)
    time.sleep(600)
    """
)


def test_a_server_started_from_a_thread_outlives_the_thread_not_the_process(
    tmp_path: Path,
) -> None:
    """The kernel sends the parent-death signal when the *thread* that forked the child
    ends (issue 26, item 7: bench.chaos restarted Redis from a thread and lost it)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", FROM_A_THREAD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())
    try:
        assert not _gone(child) and not _sigterm_pending(child), (
            "the server got SIGTERM when the thread that started it ended"
        )
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.02)  # polling another process's exit
        assert _gone(child), "the server outlived its SIGKILLed parent"
    finally:
        parent.kill()
        parent.wait()
        if not _gone(child):
            os.kill(child, signal.SIGKILL)


class _Stopped(Exception):
    pass


def test_a_stop_during_a_spawn_kills_the_child_instead_of_losing_it() -> None:
    """The signal lands while ``Popen`` runs (here: right after the fork, as on a loaded
    machine where the child's pre-exec hook is slow): raised there, the child would be
    lost to the caller's clean-up and outlive ``up``."""
    from turngraph.lifecycle import _holding_stops

    def stop(_signum: int, _frame: object) -> None:
        raise _Stopped

    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        started.append(subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"]))
        os.kill(os.getpid(), signal.SIGINT)  # delivered before Popen would have returned
        return started[0]

    previous = signal.signal(signal.SIGINT, stop)
    try:
        with pytest.raises(_Stopped):
            _holding_stops(start)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert started[0].returncode == -signal.SIGKILL  # killed and reaped, not left running
    assert signal.getsignal(signal.SIGINT) is previous


HELD = textwrap.dedent(
    """
    import os, signal
    from turngraph.lifecycle import StopSignal, raise_if_stopping, stop_on_signals, stops_held
    stop_on_signals()
    try:
        with stops_held():
            os.kill(os.getpid(), signal.SIGINT)  # delivered here, in the middle of the call
            print("the call ran to its end", flush=True)
    except StopSignal as stopped:
        print(f"then stopped: {stopped}", flush=True)
    try:
        raise_if_stopping()
    except StopSignal as again:
        print(f"polled: {again}", flush=True)
    """
)


def test_a_stop_held_around_a_call_is_raised_after_it_with_its_signals_name() -> None:
    done = _run(HELD)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "the call ran to its end",
        "then stopped: SIGINT",
        "polled: SIGINT",
    ]
