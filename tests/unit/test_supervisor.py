"""The supervisor's restart policy and its terminal budget (``turngraph/supervisor.py``);
the processes themselves are tested for real in tests/integration/test_process_lifecycle.py,
test_process_kill.py, test_process_signals.py and test_services_restart.py."""

from __future__ import annotations

import io
import itertools
from pathlib import Path

from turngraph.supervisor import Backoff, LineBudget


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
