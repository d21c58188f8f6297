"""The end-of-run check finds a process the run started and left alive, wherever it sits."""

from __future__ import annotations

import os
import subprocess
import sys

from tests.support.leftovers import MARKER, kill_all, tagged_processes


def test_a_tagged_orphan_is_found_and_killed() -> None:
    run_id = "leftover-check-" + os.urandom(4).hex()
    env = {**os.environ, MARKER: run_id}
    # A grandchild in a session of its own, its parent gone: an orphan re-parented away.
    launcher = subprocess.run(
        [
            sys.executable,
            "-c",
            "import subprocess, sys; p = subprocess.Popen([sys.executable, '-c', "
            "'import time; time.sleep(60)'], start_new_session=True, "
            "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); print(p.pid)",
        ],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    orphan = int(launcher.stdout.strip())
    try:
        assert set(tagged_processes(run_id, exclude={os.getpid()})) == {orphan}
        assert tagged_processes("another-run", exclude=set()) == {}
    finally:
        kill_all({orphan})
    # SIGKILLed and re-parented: gone, or a zombie the check does not count.
    deadline_polls = 50
    while tagged_processes(run_id, exclude=set()) and deadline_polls:
        deadline_polls -= 1
        subprocess.run(["sleep", "0.1"], check=True)  # polling another process's exit
    assert tagged_processes(run_id, exclude=set()) == {}
