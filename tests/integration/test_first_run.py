"""A first run that always works: ``turngraph up`` again and again in one data folder, the
per-user data folder found from anywhere, and nothing of it readable by others."""

from __future__ import annotations

import json
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.neo4j_tier import unavailable_reason as neo4j_unavailable
from tests.support.processes import (
    STARTUP_TIMEOUT_S,
    cli_env,
    kill_everything_of,
    processes_of,
    run,
    services_owner,
    start,
    stop,
    wait_until,
)
from turngraph.demo import DEMO_QUESTION

pytestmark = pytest.mark.timeout(900)


def _demo_recalled(output: str) -> bool:
    """The demo's answer names the decision the demo conversation recorded."""
    lines = output.splitlines()
    if f"Q: {DEMO_QUESTION}" not in lines:
        return False
    answer = lines[lines.index(f"Q: {DEMO_QUESTION}") + 1 :]
    return any(line.startswith("  1. [") and "noeviction" in line for line in answer[:5])


def test_up_demo_succeeds_three_times_in_a_row_in_one_data_dir(tmp_path: Path) -> None:
    """`make demo` again and again in one data folder; afterwards every folder in it
    (servers' databases and logs, salt, consent) is mode 700 and every file 600."""
    data_dir = tmp_path / "data"
    env = cli_env(data_dir)
    workspace = tmp_path / "project"
    workspace.mkdir()
    try:
        assert run(["consent", "enable"], env, workspace).returncode == 0
        for attempt in range(3):
            done = run(["up", "--exit-after-demo"], env, tmp_path)
            output = done.stdout + done.stderr
            assert done.returncode == 0, f"run {attempt + 1}:\n{output[-3000:]}"
            assert _demo_recalled(done.stdout), f"run {attempt + 1}:\n{done.stdout[-3000:]}"
            assert "Traceback" not in output
            assert processes_of(data_dir) == [], f"run {attempt + 1} left processes behind"
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


def test_default_data_folder_is_found_from_any_folder(tmp_path: Path) -> None:
    """No ``TURNGRAPH_DATA_DIR``: services started in one folder are found by commands and
    by the bridge started in another (the test session's platform data dir is a sandbox)."""
    xdg = tmp_path / "xdg"
    env = cli_env(None, XDG_DATA_HOME=str(xdg))
    default_dir = xdg / "turngraph"
    here, elsewhere = tmp_path / "here", tmp_path / "else" / "where"
    here.mkdir()
    elsewhere.mkdir(parents=True)
    services = start(["services"], env, here, tmp_path / "services.log")
    try:
        wait_until(
            lambda: services_owner(default_dir) == services.pid or services.poll() is not None,
            STARTUP_TIMEOUT_S,
            "services up",
        )
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
        assert _demo_recalled(again.stdout), again.stdout[-3000:]
    finally:
        kill_everything_of(data_dir)


@pytest.mark.timeout(2400)  # two JVM servers' cold starts, twice, on a loaded machine
@pytest.mark.skipif(neo4j_unavailable() is not None, reason=f"Neo4j: {neo4j_unavailable()}")
def test_up_on_neo4j_in_a_folder_used_with_arcadedb_stores_tells_and_migrates(
    tmp_path: Path,
) -> None:
    """`make demo`, then `turngraph up --graph neo4j --exit-after-demo` on the same data
    folder: the Neo4j graph is new, so the markers the ArcadeDB run left are dropped and
    the demo is stored and recalled; one line names the migration command, which copies
    the ArcadeDB graph over."""
    data_dir = tmp_path / "data"
    env = cli_env(data_dir)
    try:
        first = run(["up", "--exit-after-demo"], env, tmp_path)
        assert first.returncode == 0 and _demo_recalled(first.stdout), first.stdout[-3000:]

        second = run(["up", "--graph", "neo4j", "--exit-after-demo"], env, tmp_path, 900)
        output = second.stdout + second.stderr
        assert second.returncode == 0, output[-3000:]
        assert _demo_recalled(second.stdout), second.stdout[-3000:]
        notes = [line for line in second.stdout.splitlines() if "graph migrate" in line]
        assert len(notes) == 1 and "--from arcadedb" in notes[0], second.stdout[-3000:]

        services = start(["services", "--graph", "neo4j"], env, tmp_path, tmp_path / "s.log")
        try:
            wait_until(
                lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
                600,
                "services up",
            )
            command = notes[0].split("`")[1].split()[1:]  # turngraph graph migrate --from …
            migrated = run(command, env, tmp_path, 600)
            assert migrated.returncode == 0, migrated.stdout + migrated.stderr
            assert migrated.stdout.startswith("copied "), migrated.stdout
            assert int(migrated.stdout.split()[1]) > 0, migrated.stdout
            listed = json.loads(run(["scopes", "--json"], env, tmp_path).stdout)
            assert [row["folder"] for row in listed] == ["demo-workspace"], listed
        finally:
            stop(services)
    finally:
        kill_everything_of(data_dir)
