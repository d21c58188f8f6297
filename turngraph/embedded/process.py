"""A server run as a child process: started, waited for, ended by signal."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from schemas.errors import EmbeddedServiceError

STARTUP_TIMEOUT_S = 60.0
"""How long a server may take to accept connections before start-up counts as failed."""

STOP_TIMEOUT_S = 15.0
"""How long a server may take to exit after SIGTERM before it is SIGKILLed."""


def free_port() -> int:
    """A loopback TCP port nobody listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


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

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def start(self, ready: Callable[[], bool], timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        self._log_path.parent.mkdir(parents=True, exist_ok=True)
        with self._log_path.open("ab") as log:
            self._proc = subprocess.Popen(
                self._argv,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # a ^C in the terminal is ours to forward
                cwd=self._cwd,
            )
        deadline = time.monotonic() + timeout_s
        delay = 0.02
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise EmbeddedServiceError(
                    f"{self.name} exited with code {self._proc.returncode} during start-up; "
                    f"see {self._log_path}"
                )
            if ready():
                return
            time.sleep(delay)  # polling a child's readiness, not synchronising tests
            delay = min(delay * 1.5, 0.25)
        self.stop()
        raise EmbeddedServiceError(
            f"{self.name} not ready after {timeout_s:.0f}s; see {self._log_path}"
        )

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
