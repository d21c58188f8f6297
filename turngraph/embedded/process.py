"""A server run as a child process: started, waited for, ended by signal, and ended by the
kernel when its parent dies (see ``turngraph.lifecycle``)."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import psutil

from turngraph.lifecycle import popen_tied_to_process, raise_if_stopping, stops_held
from turngraph.producers.private_files import PRIVATE_FILE_MODE, PRIVATE_UMASK, ensure_private_dir
from turngraph.schemas.errors import EmbeddedServiceError

__all__ = [
    "STARTUP_TIMEOUT_S", "STOP_TIMEOUT_S", "OneProcessServer", "ServerProcess", "end_processes",
    "free_port", "port_free", "port_open", "processes_holding", "processes_running",
]  # fmt: skip

STARTUP_TIMEOUT_S = 60.0
"""How long a server may take to accept connections before start-up counts as failed."""

STOP_TIMEOUT_S = 15.0
"""How long a server may take to exit after SIGTERM before it is SIGKILLed."""


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    """Whether a server could listen on loopback ``port`` now (as servers do, with
    ``SO_REUSEADDR``: connections of a previous server in TIME_WAIT do not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def processes_running(executable: Path, cwd: Path) -> list[int]:
    """This user's processes running ``executable`` in ``cwd``. Both must match: a shell
    that merely sits in the folder is not one."""
    executable, cwd = executable.resolve(), cwd.resolve()
    found = []
    for proc in psutil.process_iter(["pid", "exe", "cwd"]):
        exe, where = proc.info["exe"], proc.info["cwd"]  # None: another user's process
        mine = proc.pid != os.getpid() and exe and where
        if mine and Path(exe) == executable and Path(where) == cwd:
            found.append(proc.pid)
    return found


def processes_holding(path: Path) -> list[int]:
    """This user's processes with ``path`` open."""
    path = path.resolve()
    holders = []
    for proc in psutil.process_iter():
        try:
            if any(Path(opened.path) == path for opened in proc.open_files()):
                holders.append(proc.pid)
        except psutil.Error:  # gone, or another user's process
            continue
    return holders


def end_processes(pids: Sequence[int], timeout_s: float = STOP_TIMEOUT_S) -> None:
    """SIGTERM, then SIGKILL what is still there after ``timeout_s``; waits for the end."""
    alive = []
    for pid in pids:
        with contextlib.suppress(psutil.NoSuchProcess):
            alive.append(psutil.Process(pid))
    for sig, wait_s in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        for proc in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                proc.send_signal(sig)
        _, alive = psutil.wait_procs(alive, timeout=wait_s)
        alive = [proc for proc in alive if _running(proc)]
        if not alive:
            return
    raise EmbeddedServiceError(f"processes {sorted(pids)} did not end on SIGKILL")


def _running(proc: psutil.Process) -> bool:
    """Alive and not a zombie (an orphan's zombie is reaped by init, not by us)."""
    try:
        return proc.status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


class OneProcessServer:
    """What an embedded server running as one :class:`ServerProcess` hands down to it."""

    _process: ServerProcess

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def orphans(self) -> list[int]:
        """Servers of this kind left running in this folder by an owner that is gone."""
        return self._process.orphans()

    def died(self) -> bool:
        """Started, and exited since without a stop (crashed, killed)."""
        return self._process.died()

    def stop(self) -> None:
        self._process.stop()

    def kill(self) -> None:
        self._process.kill()


class ServerProcess:
    """Owns one child process; the log goes to a file next to its data."""

    def __init__(self, name: str, argv: Sequence[str], log_path: Path) -> None:
        self.name = name
        # Servers that write files relative to their working directory (ArcadeDB's log/)
        # keep them beside their data, never in the caller's checkout.
        self._cwd = log_path.parent
        self._argv = list(argv)
        self._log_path = log_path
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_offset = 0

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def orphans(self) -> list[int]:
        """Servers of this kind still running in this folder without us: left by a
        process that was killed before parent-death signals (or on another platform)."""
        return processes_running(Path(self._argv[0]), self._cwd)

    def set_argv(self, argv: Sequence[str]) -> None:
        """The command the next :meth:`start` runs (a server's port can change before)."""
        self._argv = list(argv)

    def start(self, ready: Callable[[], bool], timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        ensure_private_dir(self._log_path.parent)
        log_fd = os.open(self._log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, PRIVATE_FILE_MODE)
        with os.fdopen(log_fd, "ab") as log:
            self._log_offset = log.seek(0, os.SEEK_END)
            self._proc = popen_tied_to_process(
                self._argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a ^C in the terminal is ours to forward
                cwd=self._cwd,
                # Dies with us even on SIGKILL (a JVM is one process: the launcher runs
                # the VM in a thread, so the signal reaches the server itself), and not
                # before, whichever thread starts it; its own files are private like the
                # rest of the data folder.
                umask=PRIVATE_UMASK,
            )
        try:
            self._wait_ready(ready, timeout_s)
        except BaseException:  # a failed start, or a stop signal while waiting
            self.stop()
            raise

    def _wait_ready(self, ready: Callable[[], bool], timeout_s: float) -> None:
        assert self._proc is not None
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise EmbeddedServiceError(
                    f"{self.name} exited with code {self._proc.returncode} during start-up; "
                    f"see {self._log_path}"
                )
            with stops_held():  # a readiness probe is a driver's call: not cut in its middle
                if ready():
                    return
            raise_if_stopping()
            time.sleep(delay)  # polling a child's readiness, not synchronising tests
            delay = min(delay * 1.5, 0.25)
        raise EmbeddedServiceError(
            f"{self.name} not ready after {timeout_s:.0f}s; see {self._log_path}"
        )

    def died(self) -> bool:
        """Started, and exited since without being stopped by us."""
        return self._proc is not None and self._proc.poll() is not None

    def log_since_start(self, limit: int = 64_000) -> str:
        """What the server wrote to its log since the last start (its last ``limit`` bytes)."""
        try:
            with self._log_path.open("rb") as log:
                size = log.seek(0, os.SEEK_END)
                log.seek(max(self._log_offset, size - limit))
                return log.read().decode(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        proc, self._proc = self._proc, None
        if proc is None or proc.poll() is not None:
            return
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=5)

    def kill(self) -> None:
        """SIGKILL, for chaos tests: no clean shutdown."""
        if self._proc is not None and self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(timeout=5)
        self._proc = None
