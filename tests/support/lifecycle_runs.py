"""``turngraph up`` run the way a script runs it, for the process lifecycle tests."""

from __future__ import annotations

import subprocess
from pathlib import Path

from tests.support.processes import STARTUP_TIMEOUT_S, cli_env, run, start, wait_until

__all__ = [
    "LEFTOVER_DEADLINE_S", "RUNNING", "STOP_DEADLINE_S", "alive", "demo_works", "log_says",
    "parent_of", "up_and_serving",
]  # fmt: skip

LEFTOVER_DEADLINE_S = 10.0
"""How soon after its owner's death no server or worker of a data folder may remain."""

STOP_DEADLINE_S = 10.0
"""How soon a signalled long-running command must have exited, its children with it."""

RUNNING = "turngraph is running"


def log_says(log: Path, text: str) -> bool:
    return log.exists() and text in log.read_text(errors="replace")


def up_and_serving(tmp_path: Path, data_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "up.log"
    up = start(["up"], cli_env(data_dir), tmp_path, log)
    wait_until(
        lambda: log_says(log, RUNNING) or up.poll() is not None,
        STARTUP_TIMEOUT_S * 2,
        "`turngraph up` serving after its demo",
    )
    assert up.poll() is None, log.read_text()[-3000:]
    return up, log


def demo_works(tmp_path: Path, data_dir: Path) -> None:
    done = run(["up", "--exit-after-demo"], cli_env(data_dir), tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "noeviction" in done.stdout and "Traceback" not in output


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"
