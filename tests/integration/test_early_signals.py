"""A stop signal at any moment of a command's start-up, from its first instruction: Ctrl-C
(SIGINT, inherited as Python's default) in the foreground and SIGINT to a script's
background job (inherited ignored) end ``turngraph up`` in one line, exit status 0, no
traceback, nothing of it left running.

Before the interpreter runs turngraph's first line, the signal is the operating system's
and Python's business (an inherited "ignore" discards it); on a machine so loaded that
this takes longer than the chosen moment, the signal is sent as soon as turngraph's
handlers are in place (``/proc``: SIGTERM caught, which Python alone never does)."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import cli_env, kill_everything_of, processes_of, stop, wait_until

pytestmark = pytest.mark.timeout(300)

STOP_DEADLINE_S = 20.0
"""A stop at 3 s can land while the graph server's JVM starts (its own stop is awaited)."""


def _handlers_installed(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    caught = int(
        next(line for line in status.splitlines() if line.startswith("SigCgt:")).split()[1], 16
    )
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def _start_up(tmp_path: Path, data_dir: Path, background: bool) -> subprocess.Popen[bytes]:
    with (tmp_path / "up.log").open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "turngraph", "up"],
            env={**cli_env(data_dir), "TURNGRAPH_LOG_FORMAT": "console"},
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # a script's background job inherits SIGINT ignored; a terminal's, the default
            preexec_fn=(lambda: signal.signal(signal.SIGINT, signal.SIG_IGN))
            if background
            else None,
        )


@pytest.mark.parametrize("background", [False, True], ids=["foreground", "background"])
@pytest.mark.parametrize("after_s", [0.2, 0.5, 1.0, 2.0, 3.0])
def test_sigint_during_start_up_stops_up_in_one_line(
    tmp_path: Path, after_s: float, background: bool
) -> None:
    data_dir = tmp_path / "data"
    up = _start_up(tmp_path, data_dir, background)
    try:
        # the signal's moment is what is tested: `up` must still be starting then
        with pytest.raises(subprocess.TimeoutExpired):
            up.wait(timeout=after_s)
        wait_until(lambda: _handlers_installed(up.pid), 30, "turngraph's first line ran")
        up.send_signal(signal.SIGINT)
        code = up.wait(timeout=STOP_DEADLINE_S)
        output = (tmp_path / "up.log").read_text(errors="replace")
        assert code == 0, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
        assert "stopped" in output and "SIGINT" in output, output[-3000:]
        wait_until(
            lambda: processes_of(data_dir) == [],
            5,
            lambda: f"nothing of `up` left: {processes_of(data_dir)}",
        )
    finally:
        stop(up)
        kill_everything_of(data_dir)
