"""The supervisor's restart policy and its terminal budget (``turngraph/supervisor.py``);
the processes themselves are tested for real in tests/integration/test_process_lifecycle.py,
test_process_kill.py, test_process_signals.py and test_services_restart.py."""

from __future__ import annotations

import io
import itertools
import os
import sys
from pathlib import Path

from tests.support.processes import wait_until
from turngraph.supervisor import Backoff, ChildProcess, LineBudget


def test_a_child_that_keeps_dying_waits_longer_each_time_up_to_the_cap() -> None:
    policy = Backoff(first_s=0.5, max_s=4.0, stable_after_s=30.0)
    waits = [policy.after_exit(ran_s=1.0) for _ in range(6)]
    assert waits == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]
    assert policy.after_exit(ran_s=31.0) == 0.0  # it ran long enough: at once, and reset
    assert policy.after_exit(ran_s=1.0) == 0.5


def test_waits_for_a_lost_server_follow_the_same_policy() -> None:
    delays = list(itertools.islice(Backoff(first_s=0.5, max_s=4.0).delays(), 6))
    assert delays == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_lines_past_the_budget_go_to_the_files_only_and_are_counted(tmp_path: Path) -> None:
    out = io.StringIO()
    budget = LineBudget(tmp_path / "logs", lines=3, window_s=3600.0, out=out)
    for index in range(40):  # a traceback's worth
        budget.offer(f"line {index}\n")
    budget.close_window()  # the window is not over: nothing said yet
    assert out.getvalue() == "line 0\nline 1\nline 2\n"
    budget.flush()
    assert out.getvalue().splitlines()[3:] == [
        f"(37 more lines from the workers in {tmp_path / 'logs'}/)"
    ]


def test_a_new_window_opens_with_the_next_line_after_one_is_over(tmp_path: Path) -> None:
    out = io.StringIO()
    budget = LineBudget(tmp_path, lines=1, window_s=0.0, out=out)  # every window is over
    budget.offer("first\n")
    budget.offer("second\n")
    budget.flush()
    assert out.getvalue() == "first\nsecond\n"  # nothing was held back


def test_a_childs_log_is_rolled_over_past_its_size_and_one_earlier_file_kept(
    tmp_path: Path,
) -> None:
    out = io.StringIO()
    budget = LineBudget(tmp_path, lines=0, window_s=3600.0, out=out, max_log_bytes=1_000)
    printer = "import sys\nfor i in range(300): print(f'line {i:04d}')\n"  # 10 bytes a line
    child = ChildProcess("ingest-1", [sys.executable, "-c", printer], dict(os.environ), budget)
    child.start()
    child.wait()
    wait_until(
        lambda: (tmp_path / "ingest-1.log").exists() and _last_line(tmp_path) == "line 0299",
        30,
        "the relay wrote the last line",
    )
    logs = sorted(path.name for path in tmp_path.iterdir())
    assert logs == ["ingest-1.log", "ingest-1.log.1"]
    sizes = [(tmp_path / name).stat().st_size for name in logs]
    assert all(size <= 1_000 for size in sizes) and sizes[1] >= 990
    assert (tmp_path / "ingest-1.log.1").read_text().splitlines()[-1] < "line 0299"


def _last_line(folder: Path) -> str:
    lines = (folder / "ingest-1.log").read_text().splitlines()
    return lines[-1] if lines else ""
