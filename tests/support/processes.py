"""Real ``turngraph`` processes for lifecycle tests, and what they leave behind.

Every wait polls a condition against a deadline; nothing sleeps to synchronise.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from turngraph.embedded.services import STATE_FILE

STARTUP_TIMEOUT_S = 120.0
"""A cold JVM on a loaded two-core machine."""


def wait_until(
    condition: Callable[[], object], timeout_s: float, what: str | Callable[[], str]
) -> None:
    """Poll ``condition``; ``what`` (or what it returns, asked on failure) names it."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            said = what() if callable(what) else what
            raise AssertionError(f"not within {timeout_s:.0f}s: {said}")
        time.sleep(0.05)  # polling other processes' state


def cli_env(data_dir: Path | None, **extra: str) -> dict[str, str]:
    """This environment without any configured service, for ``data_dir`` (None: the
    default data folder, which the test session points into its sandbox)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("TURNGRAPH_") or key == "TURNGRAPH_LOG_FORMAT"
    }
    env.update(TURNGRAPH_LOG_LEVEL="INFO", TURNGRAPH_LOG_FORMAT="json", **extra)
    if data_dir is not None:
        env["TURNGRAPH_DATA_DIR"] = str(data_dir)
    return env


def _ignore_sigint() -> None:
    # What a shell does to a background job of a script: SIGINT arrives ignored.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def start(
    args: Sequence[str],
    env: dict[str, str],
    cwd: Path,
    log: Path,
    *,
    stdin: int | None = subprocess.DEVNULL,
) -> subprocess.Popen[bytes]:
    """``turngraph ARGS`` as a script's background job: own session, SIGINT ignored."""
    with log.open("ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "turngraph.cli", *args],
            env=env,
            cwd=cwd,
            stdin=stdin,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=_ignore_sigint,
        )


def run(
    args: Sequence[str], env: dict[str, str], cwd: Path, timeout_s: float = 300
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turngraph.cli", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout_s,
        check=False,
    )


def services_owner(data_dir: Path) -> int | None:
    """The pid recorded in the data folder's ``services.json``, once the services are up."""
    try:
        return int(json.loads((data_dir / STATE_FILE).read_text())["owner_pid"])
    except (OSError, ValueError, KeyError):
        return None


def start_services(
    env: dict[str, str], cwd: Path, data_dir: Path, log: Path
) -> subprocess.Popen[bytes]:
    """``turngraph services`` started in ``cwd``, waited for until it owns ``data_dir``'s
    services or has exited (stopped again if the wait fails)."""
    services = start(["services"], env, cwd, log)
    try:
        wait_until(
            lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
            STARTUP_TIMEOUT_S,
            "services up",
        )
    except BaseException:
        stop(services)
        raise
    return services


def _mentions(entry: Path, needle: bytes) -> bool:
    for name in ("cmdline", "environ"):
        try:
            if needle in (entry / name).read_bytes():
                return True
        except OSError:
            pass
    try:
        return needle in os.fsencode((entry / "cwd").readlink())
    except OSError:
        return False


def processes_of(data_dir: Path) -> list[str]:
    """Every live process whose working directory, command line or environment names
    ``data_dir``: embedded servers (they run in it) and workers (it is in their env)."""
    needle = os.fsencode(str(data_dir.resolve()))
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            state = (entry / "stat").read_text().rpartition(")")[2].split()[0]
        except OSError:
            continue
        if state != "Z" and _mentions(entry, needle):
            try:
                command = (entry / "cmdline").read_bytes().replace(b"\0", b" ")[:120]
            except OSError:
                continue
            found.append(f"{entry.name}: {command.decode(errors='replace')}")
    return found


def stop(process: subprocess.Popen[bytes]) -> None:
    """Clean-up for a test that failed half-way: nothing may outlive it."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def kill_everything_of(data_dir: Path) -> None:
    """Last resort after a failed test: SIGKILL whatever still runs for ``data_dir``."""
    for line in processes_of(data_dir):
        with contextlib.suppress(ProcessLookupError):
            os.kill(int(line.partition(":")[0]), signal.SIGKILL)
