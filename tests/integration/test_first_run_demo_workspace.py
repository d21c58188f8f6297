"""The demo of a first run lives in its own workspace, which the line it prints removes
(``turngraph forget``); the demo run again afterwards stores it again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.demo_output import demo_recalled
from tests.support.processes import (
    STARTUP_TIMEOUT_S,
    cli_env,
    kill_everything_of,
    run,
    services_owner,
    start,
    stop,
    wait_until,
)

pytestmark = [pytest.mark.heavy(80), pytest.mark.timeout(900)]


def test_the_demo_lives_in_its_own_workspace_that_forget_removes(tmp_path: Path) -> None:
    """The demo conversation is not written into the user's own memory: `turngraph scopes`
    names its workspace, and the line the demo prints removes it; the demo run again
    afterwards stores it again (a forgotten scope's turns are not refused for ever)."""
    data_dir = tmp_path / "data"
    env = cli_env(data_dir)
    try:
        done = run(["up", "--exit-after-demo"], env, tmp_path)
        assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
        removal = next(line for line in done.stdout.splitlines() if "turngraph forget" in line)
        command = removal.split("`")[1].split()[1:]  # turngraph forget ... --yes
        assert command[:3] == ["forget", "--scope", "workspace"]

        services = start(["services"], env, tmp_path, tmp_path / "services.log")
        try:
            wait_until(
                lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
                STARTUP_TIMEOUT_S,
                "services up",
            )
            listed = json.loads(run(["scopes", "--json"], env, tmp_path).stdout)
            assert [row["folder"] for row in listed] == ["demo-workspace"], listed
            forgotten = run(command, env, tmp_path)
            assert forgotten.returncode == 0, forgotten.stderr
            assert json.loads(run(["scopes", "--json"], env, tmp_path).stdout) == []
        finally:
            stop(services)
        # The README's sequence goes on: `make demo` again stores the demo turns again.
        again = run(["up", "--exit-after-demo"], env, tmp_path)
        assert again.returncode == 0, (again.stdout + again.stderr)[-3000:]
        assert demo_recalled(again.stdout), again.stdout[-3000:]
    finally:
        kill_everything_of(data_dir)
