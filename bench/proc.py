"""What a process (or the machine) has used so far, read from Linux's ``/proc``."""

from __future__ import annotations

import os
from pathlib import Path


def cpu_seconds(pid: int) -> float:
    """User + system CPU time a process (and its waited-for children) has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    ticks = sum(int(v) for v in fields[11:15])  # utime, stime, cutime, cstime
    return ticks / os.sysconf("SC_CLK_TCK")


def machine_busy_seconds() -> float:
    """CPU time all cores have spent not idle (nor waiting on I/O) since boot."""
    fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle, iowait
    return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float:
    """Resident memory in MB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def scheduling(pid: int) -> tuple[float, int]:
    """(seconds the process's threads have spent runnable but waiting for a core, times
    they were put on a core) so far, from ``/proc/<pid>/task/<tid>/schedstat``; threads
    that ended are not counted."""
    waited_ns = runs = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            _, waited, slices = (int(v) for v in (task / "schedstat").read_text().split()[:3])
        except (OSError, ValueError):
            continue  # the thread ended meanwhile
        waited_ns += waited
        runs += slices
    return waited_ns / 1e9, runs


def thread_waited_seconds() -> float:
    """Time the calling thread has spent runnable but waiting for a core so far."""
    return int(Path("/proc/thread-self/schedstat").read_text().split()[1]) / 1e9


def threads_cpu_seconds(pid: int, name_prefixes: tuple[str, ...]) -> dict[int, float]:
    """User + system CPU time so far of each thread of ``pid`` whose name (``comm``) starts
    with one of ``name_prefixes``, by thread id; threads that ended are not in it."""
    found: dict[int, float] = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            if not (task / "comm").read_text().startswith(name_prefixes):
                continue
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended meanwhile
        found[int(task.name)] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return found


class ThreadsClock:
    """CPU time a group of a process's threads used between :meth:`start` and the last
    :meth:`sample`; sample often: HotSpot ends idle compiler threads and starts new ones
    (``UseDynamicNumberOfCompilerThreads``), and an ended thread's time is lost."""

    def __init__(self, pid: int, name_prefixes: tuple[str, ...]) -> None:
        self.pid = pid
        self.name_prefixes = name_prefixes
        self._first: dict[int, float] = {}
        self._last: dict[int, float] = {}

    def start(self) -> None:
        self._first = threads_cpu_seconds(self.pid, self.name_prefixes)
        self._last = dict(self._first)

    def sample(self) -> None:
        self._last.update(threads_cpu_seconds(self.pid, self.name_prefixes))

    @property
    def seconds(self) -> float:
        return sum(last - self._first.get(tid, 0.0) for tid, last in self._last.items())
