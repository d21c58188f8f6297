"""The one supervisor of ``turngraph up``, ``turngraph services`` and ``turngraph worker``.

:class:`Supervisor` starts again a child that died, after the wait :class:`Backoff` says
(``worker`` waits for a lost Redis or graph with the same policy); :class:`ChildProcess`
runs a command tied to this process, its output to a log file and, through a shared
:class:`LineBudget`, a few lines to the terminal. docs/operations.md ("Embedded
services: restarts").
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

import psutil
import structlog

from turngraph.embedded.redis_server import without_password
from turngraph.embedded.services import read_endpoints
from turngraph.lifecycle import pause, popen_tied_to_process
from turngraph.producers.private_files import PRIVATE_FILE_MODE, ensure_private_dir

__all__ = [
    "MAX_LOG_BYTES", "SUPERVISE_EVERY_S", "Backoff", "Child", "ChildProcess", "LineBudget",
    "Supervisor", "follow_embedded_services", "stop_all",
]  # fmt: skip

log = structlog.get_logger(__name__)

SUPERVISE_EVERY_S = 1.0
"""How often the supervisor checks that its children still run."""

STOP_TIMEOUT_S = 15.0
"""How long a child process may take to stop after SIGTERM before it is killed."""


@dataclass
class Backoff:
    """The restart policy: a child that ran less than ``stable_after_s`` waits
    ``first_s`` before its next start, doubling up to ``max_s`` while it keeps dying (a
    crash loop costs one start per ``max_s``); one that ran longer starts again at once."""

    first_s: float = 0.5
    max_s: float = 15.0
    stable_after_s: float = 30.0
    _next_s: float = field(default=0.0, init=False)

    def after_exit(self, ran_s: float) -> float:
        """The wait before starting again a child that exited after running ``ran_s``."""
        if ran_s >= self.stable_after_s:
            self._next_s = 0.0
            return 0.0
        wait = self._next_s or self.first_s
        self._next_s = min(wait * 2, self.max_s)
        return wait

    def delays(self) -> Iterator[float]:
        """The waits between attempts to reach something again (Redis, the graph)."""
        wait = self.first_s
        while True:
            yield wait
            wait = min(wait * 2, self.max_s)


class Child(Protocol):
    """What the supervisor needs of a child: servers and :class:`ChildProcess` alike."""

    name: str

    @property
    def pid(self) -> int | None: ...

    def start(self) -> None: ...

    def died(self) -> bool:
        """Started, and exited since without a stop."""
        ...

    def stop(self) -> None: ...


@dataclass
class _Watched:
    child: Child
    started: float
    backoff: Backoff = field(default_factory=Backoff)
    not_before: float = 0.0
    """When a dead child may start again; 0.0 until it is seen dead."""


class Supervisor:
    """Children started (and stopped) by their owner, started again when they die."""

    def __init__(self, children: Sequence[Child], budget: LineBudget | None = None) -> None:
        # started by their owner a while ago: a first exit is not a crash loop
        self._watched = [_Watched(child, -math.inf) for child in children]
        self._budget = budget

    def check(self) -> list[str]:
        """Start again each child that died (after its back-off); returns their names."""
        restarted = []
        now = time.monotonic()
        for watched in self._watched:
            child = watched.child
            if watched.not_before == 0.0:
                if not child.died():
                    continue
                wait_s = watched.backoff.after_exit(now - watched.started)
                watched.not_before = now + wait_s
                log.warning(
                    "process_exited", process=child.name, pid=child.pid, restart_in_s=wait_s
                )
            if now < watched.not_before:
                continue
            try:
                child.start()
            except Exception as error:  # a failed start is tried again later
                watched.started = watched.not_before = time.monotonic()
                log.error("process_restart_failed", process=child.name, error=str(error))
                continue
            watched.started, watched.not_before = time.monotonic(), 0.0
            log.warning("process_restarted", process=child.name, pid=child.pid)
            restarted.append(child.name)
        return restarted

    def run(self) -> None:
        """Until a stop signal (:class:`~turngraph.lifecycle.StopSignal`): :meth:`check`
        every :data:`SUPERVISE_EVERY_S`."""
        while True:
            pause(SUPERVISE_EVERY_S)
            self.check()
            if self._budget is not None:
                self._budget.close_window()


MAX_LOG_BYTES = 10_000_000
"""A child's log file is renamed to ``<name>.log.1`` (replacing the one before) once the
next line would take it past this size."""


class LineBudget:
    """At most ``lines`` child output lines on the terminal in any ``window_s`` (a window
    opens with the first line after a quiet one); the lines past that go to the log files
    only, and one line says how many once the window is over."""

    def __init__(
        self,
        log_dir: Path,
        lines: int = 5,
        window_s: float = 60.0,
        out: IO[str] | None = None,
        max_log_bytes: int = MAX_LOG_BYTES,
    ) -> None:
        self.log_dir = log_dir
        self.max_log_bytes = max_log_bytes
        self._lines, self._window_s = lines, window_s
        self._out = out or sys.stderr
        self._lock = threading.Lock()
        self._opened: float | None = None
        self._shown = self._held = 0

    def offer(self, line: str) -> None:
        """Show ``line`` if the window still has room, else count it."""
        with self._lock:
            now = time.monotonic()
            self._roll(now)
            if self._opened is None:
                self._opened = now
            if self._shown < self._lines:
                self._shown += 1
                self._write(line if line.endswith("\n") else line + "\n")
            else:
                self._held += 1

    def close_window(self) -> None:
        """Say how many lines were held back, once the window is over."""
        with self._lock:
            self._roll(time.monotonic())

    def flush(self) -> None:
        """Say now how many lines were held back (at the end of the run)."""
        with self._lock:
            self._roll(float("inf"))

    def _roll(self, now: float) -> None:
        if self._opened is None or now - self._opened < self._window_s:
            return
        if self._held:
            self._write(f"({self._held} more lines from the workers in {self.log_dir}/)\n")
        self._opened, self._shown, self._held = None, 0, 0

    def _write(self, text: str) -> None:
        with contextlib.suppress(OSError, ValueError):  # a closed terminal loses nothing
            self._out.write(text)
            self._out.flush()


def _append_to(path: Path) -> IO[bytes]:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
    log_file = os.fdopen(fd, "ab")
    log_file.seek(0, os.SEEK_END)
    return log_file


class ChildProcess:
    """``argv`` as a child tied to this process, its output appended to
    ``<log_dir>/<name>.log`` and offered to ``budget`` (or inherited without one)."""

    def __init__(
        self, name: str, argv: Sequence[str], env: dict[str, str], budget: LineBudget | None = None
    ) -> None:
        self.name = name
        self._argv, self._env, self._budget = list(argv), env, budget
        self.process: subprocess.Popen[bytes] | None = None
        self._stopped = False

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def start(self) -> None:
        self._stopped = False
        piped = self._budget is not None
        self.process = popen_tied_to_process(  # a kill -9 of us is a kill -9 of them
            self._argv,
            death_signal=signal.SIGKILL,
            env=self._env,
            stdout=subprocess.PIPE if piped else None,
            stderr=subprocess.STDOUT if piped else None,
        )
        if self._budget is not None and self.process.stdout is not None:
            threading.Thread(
                target=self._relay,
                args=(self.process.stdout, self._budget),
                name=f"{self.name}-output",
                daemon=True,
            ).start()

    def _relay(self, stream: IO[bytes], budget: LineBudget) -> None:
        ensure_private_dir(budget.log_dir)
        path = budget.log_dir / f"{self.name}.log"
        log_file = _append_to(path)
        try:
            with stream:
                for raw in stream:
                    if log_file.tell() + len(raw) > budget.max_log_bytes:
                        # one earlier file kept: a child's log never grows without bound
                        log_file.close()
                        os.replace(path, path.with_name(f"{path.name}.1"))
                        log_file = _append_to(path)
                    log_file.write(raw)
                    log_file.flush()
                    budget.offer(raw.decode(errors="replace"))
        finally:
            log_file.close()

    def died(self) -> bool:
        return not self._stopped and self.process is not None and self.process.poll() is not None

    def signal(self, sig: signal.Signals) -> None:
        self._stopped = True
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)

    def wait(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Wait for the end; SIGKILL after ``timeout_s``."""
        if self.process is None:
            return
        try:
            self.process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def stop(self) -> None:
        self.signal(signal.SIGTERM)
        self.wait()


def stop_all(children: Sequence[ChildProcess]) -> None:
    """SIGTERM to all at once (they stop in parallel), then wait for each."""
    for child in children:
        child.signal(signal.SIGTERM)
    for child in children:
        child.wait()


FOLLOW_EVERY_S = 2.0
"""How often a worker on embedded services reads ``services.json`` for a move."""


def follow_embedded_services(data_dir: Path, redis_url: str, graph_uri: str) -> None:
    """When ``turngraph services`` comes back elsewhere (another port: the old one was
    taken; ``services.json`` names the new endpoints), this process starts again as
    itself (``exec``, same pid) and finds them: nothing it holds is worth more than
    reaching the new servers, the old ones are gone with their owner. A daemon thread
    checks every :data:`FOLLOW_EVERY_S`."""

    def moved() -> bool:
        now = read_endpoints(data_dir)
        return now is not None and (now.redis_url, now.graph_uri) != (redis_url, graph_uri)

    def watch() -> None:
        while not moved():
            time.sleep(FOLLOW_EVERY_S)
        now = read_endpoints(data_dir)
        log.warning(
            "embedded_services_moved",
            redis=without_password(now.redis_url) if now else None,
            graph=now.graph_uri if now else None,
        )
        for child in psutil.Process().children(recursive=True):  # RQ's scheduler
            with contextlib.suppress(psutil.Error):
                child.kill()
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(sys.executable, sys.orig_argv)

    threading.Thread(target=watch, name="follow-services", daemon=True).start()
