"""Worker processes for tests: their environment, start, graceful stop, polling."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

from turngraph.clients import Clients


def worker_env(clients: Clients, **overrides: str) -> dict[str, str]:
    s = clients.settings
    return {
        **os.environ,
        "TURNGRAPH_REDIS_URL": str(s.redis_url),
        "TURNGRAPH_GRAPH_URI": str(s.graph_uri),
        "TURNGRAPH_GRAPH_USER": s.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": s.graph_password.get_secret_value(),
        "TURNGRAPH_GRAPH_DATABASE": str(s.graph_database or ""),
        "TURNGRAPH_DATA_DIR": str(s.data_dir),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
        **overrides,
    }


def wait_for(condition: Callable[[], object], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.1)  # polling another process's progress
    return False


def start_worker(kind: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``turngraph worker KIND`` as a real process (stdout and stderr captured together)."""
    return subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "worker", kind],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )


def stop(proc: subprocess.Popen[bytes], *, signalled: bool = False) -> tuple[int, str]:
    """SIGTERM (unless ``signalled`` already: a second one means a cold shutdown), wait;
    its exit code and output (SIGKILL after 60 s)."""
    if proc.poll() is None and not signalled:
        proc.send_signal(signal.SIGTERM)
    try:
        output = proc.communicate(timeout=60)[0]
    except subprocess.TimeoutExpired:
        proc.kill()
        output = proc.communicate()[0]
    return proc.returncode, output.decode(errors="replace")
