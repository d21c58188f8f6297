"""A first run that always works: ``turngraph up`` again and again in one data folder, the
demo in a workspace of its own that ``forget`` removes, the per-user data folder found from
anywhere, and nothing of it readable by others."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.demo_output import demo_recalled
from tests.support.processes import (
    cli_env,
    kill_everything_of,
    processes_of,
    run,
    start_services,
    stop,
    wait_until,
)

pytestmark = [pytest.mark.heavy(180), pytest.mark.timeout(900)]


def test_up_demo_succeeds_three_times_in_one_data_dir_and_its_workspace_is_forgettable(
    tmp_path: Path,
) -> None:
    """`make demo` again and again in one data folder; afterwards every folder in it
    (servers' databases and logs, salt, consent) is mode 700 and every file 600.
    Between the second and the third run, the README's sequence: the demo lives in its own
    workspace (`turngraph scopes` names it), which the line the demo prints removes
    (`turngraph forget`); the third run stores it again (a forgotten scope's turns are not
    refused for ever). One test for both, as each needs `up` run again in a used folder:
    three `up` cycles instead of five."""
    data_dir = tmp_path / "data"
    env = cli_env(data_dir)
    workspace = tmp_path / "project"
    workspace.mkdir()
    try:
        assert run(["consent", "enable"], env, workspace).returncode == 0
        outputs = [demo_in(data_dir, env, tmp_path, attempt) for attempt in (1, 2)]
        removal = next(line for line in outputs[0].splitlines() if "turngraph forget" in line)
        command = removal.split("`")[1].split()[1:]  # turngraph forget ... --yes
        assert command[:3] == ["forget", "--scope", "workspace"]

        services = start_services(env, tmp_path, data_dir, tmp_path / "services.log")
        try:
            listed = json.loads(run(["scopes", "--json"], env, tmp_path).stdout)
            assert [row["folder"] for row in listed] == ["demo-workspace"], listed
            forgotten = run(command, env, tmp_path)
            assert forgotten.returncode == 0, forgotten.stderr
            assert json.loads(run(["scopes", "--json"], env, tmp_path).stdout) == []
        finally:
            stop(services)
        wait_until(lambda: processes_of(data_dir) == [], 30, "nothing of `services` left")
        demo_in(data_dir, env, tmp_path, 3)  # stores the forgotten demo again
    finally:
        kill_everything_of(data_dir)
    assert stat.S_IMODE(data_dir.stat().st_mode) == 0o700
    loose = [
        f"{oct(stat.S_IMODE(path.lstat().st_mode))} {path.relative_to(data_dir)}"
        for path in data_dir.rglob("*")
        if not path.is_symlink()
        and stat.S_IMODE(path.lstat().st_mode) != (0o700 if path.is_dir() else 0o600)
    ]
    assert loose == []
    assert (data_dir / "consent.json").exists() and (data_dir / "graph" / "databases").is_dir()


def demo_in(data_dir: Path, env: dict[str, str], cwd: Path, attempt: int) -> str:
    """`turngraph up --exit-after-demo`: exit 0, the demo recalled, no traceback, nothing
    left running; its standard output."""
    done = run(["up", "--exit-after-demo"], env, cwd)
    output = done.stdout + done.stderr
    assert done.returncode == 0, f"run {attempt}:\n{output[-3000:]}"
    assert demo_recalled(done.stdout), f"run {attempt}:\n{done.stdout[-3000:]}"
    assert "Traceback" not in output
    assert processes_of(data_dir) == [], f"run {attempt} left processes behind"
    return done.stdout


def test_default_data_folder_is_found_from_any_folder(tmp_path: Path) -> None:
    """No ``TURNGRAPH_DATA_DIR``: services started in one folder are found by commands and
    by the bridge started in another (the test session's platform data dir is a sandbox)."""
    xdg = tmp_path / "xdg"
    env = cli_env(None, XDG_DATA_HOME=str(xdg))
    default_dir = xdg / "turngraph"
    here, elsewhere = tmp_path / "here", tmp_path / "else" / "where"
    here.mkdir()
    elsewhere.mkdir(parents=True)
    services = start_services(env, here, default_dir, tmp_path / "services.log")
    try:
        assert services.poll() is None, (tmp_path / "services.log").read_text()[-2000:]
        assert not (here / ".turngraph").exists() and not (elsewhere / ".turngraph").exists()

        queue = run(["queue", "status", "--json"], env, elsewhere)
        assert queue.returncode == 0, queue.stderr
        assert json.loads(queue.stdout)["success"] is True

        bridge = subprocess.run(
            [sys.executable, "-m", "turngraph.cli", "bridge"],
            input=b'{"id": 7, "op": "status"}\n',
            env=env,
            cwd=elsewhere,
            capture_output=True,
            timeout=60,
            check=False,
        )
        reply = json.loads(bridge.stdout.splitlines()[0])
        assert reply["id"] == 7 and reply["success"], reply
        assert reply["queue"] is not None and reply["endpoint"].endswith(str(default_dir)), reply

        services.send_signal(signal.SIGTERM)
        assert services.wait(timeout=60) == 0
        wait_until(lambda: processes_of(default_dir) == [], 10, "no server left")
    finally:
        stop(services)
        kill_everything_of(default_dir)
