"""Which processes a test run started and left alive.

Every process the run starts (embedded servers, workers, honcho, Node clients) inherits
the run's environment, including a marker variable set once per run; an orphan keeps its
environment after its parent dies, so a scan of ``/proc/*/environ`` finds what leaked
even when it was re-parented to PID 1 or sits in a session of its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import uuid
from pathlib import Path

MARKER = "TURNGRAPH_TEST_RUN"
"""The environment variable that tags every process of one test run."""


def tag_this_run() -> str:
    """Tag this process (and so every process it starts) with a fresh run id."""
    run_id = uuid.uuid4().hex
    os.environ[MARKER] = run_id
    return run_id


def tagged_processes(
    run_id: str, *, exclude: set[int], folders: tuple[Path, ...] = ()
) -> dict[int, str]:
    """``{pid: command line}`` of live processes carrying ``run_id`` or working inside one
    of ``folders``, minus ``exclude``."""
    needle = f"{MARKER}={run_id}".encode()
    found: dict[int, str] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) in exclude:
            continue
        try:
            tagged = needle in (entry / "environ").read_bytes().split(b"\0")
            if not tagged and not _works_inside(entry, folders):
                continue
            if (entry / "stat").read_text().split(") ")[-1].startswith("Z"):
                continue  # a zombie holds nothing; its parent has not reaped it yet
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile, or not ours to read
            continue
        found[int(entry.name)] = cmdline.strip()
    return found


def _works_inside(entry: Path, folders: tuple[Path, ...]) -> bool:
    if not folders:
        return False
    cwd = (entry / "cwd").resolve()
    return any(cwd == folder or folder in cwd.parents for folder in folders)


def kill_all(pids: set[int]) -> None:
    """SIGKILL what leaked, so a failed check still leaves the machine clean."""
    for pid in pids:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
