"""A first run on Neo4j in a data folder used with ArcadeDB before: the demo is stored in
the new graph, and one line names the command that migrates the ArcadeDB graph over."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest

from tests.support.demo_output import demo_recalled
from tests.support.lifecycle_runs import RUNNING, log_says
from tests.support.neo4j_tier import unavailable_reason as neo4j_unavailable
from tests.support.processes import (
    cli_env,
    kill_everything_of,
    processes_of,
    run,
    start,
    stop,
    wait_until,
)

pytestmark = pytest.mark.heavy(280)


@pytest.mark.timeout(2400)  # two JVM servers' cold starts on a loaded machine
@pytest.mark.skipif(neo4j_unavailable() is not None, reason=f"Neo4j: {neo4j_unavailable()}")
def test_up_on_neo4j_in_a_folder_used_with_arcadedb_stores_tells_and_migrates(
    tmp_path: Path,
) -> None:
    """`make demo`, then `turngraph up --graph neo4j` on the same data folder: the Neo4j
    graph is new, so the markers the ArcadeDB run left are dropped and the demo is stored
    and recalled; one line names the migration command, which, run while that `up` serves
    (as the line says), copies the ArcadeDB graph over. One Neo4j start for it all: `up`
    stays up for the migration rather than a `turngraph services` started after it."""
    data_dir = tmp_path / "data"
    env = cli_env(data_dir)
    try:
        first = run(["up", "--exit-after-demo"], env, tmp_path)
        assert first.returncode == 0 and demo_recalled(first.stdout), first.stdout[-3000:]

        log = tmp_path / "up.log"
        up = start(["up", "--graph", "neo4j"], env, tmp_path, log)
        try:
            wait_until(
                lambda: log_says(log, RUNNING) or up.poll() is not None,
                900,
                "`up --graph neo4j` serving after its demo",
            )
            output = log.read_text()
            assert up.poll() is None, output[-3000:]
            assert demo_recalled(output), output[-3000:]
            notes = [line for line in output.splitlines() if "graph migrate" in line]
            assert len(notes) == 1 and "--from arcadedb" in notes[0], output[-3000:]

            command = notes[0].split("`")[1].split()[1:]  # turngraph graph migrate --from …
            migrated = run(command, env, tmp_path, 600)
            assert migrated.returncode == 0, migrated.stdout + migrated.stderr
            assert migrated.stdout.startswith("copied "), migrated.stdout
            assert int(migrated.stdout.split()[1]) > 0, migrated.stdout
            listed = json.loads(run(["scopes", "--json"], env, tmp_path).stdout)
            assert [row["folder"] for row in listed] == ["demo-workspace"], listed

            up.send_signal(signal.SIGTERM)
            assert up.wait(timeout=120) == 0, log.read_text()[-3000:]
            wait_until(lambda: processes_of(data_dir) == [], 30, "nothing of `up` left")
        finally:
            stop(up)
    finally:
        kill_everything_of(data_dir)
