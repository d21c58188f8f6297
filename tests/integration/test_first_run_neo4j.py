"""A first run on Neo4j in a data folder used with ArcadeDB before: the demo is stored in
the new graph, and one line names the command that migrates the ArcadeDB graph over."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.demo_output import demo_recalled
from tests.support.neo4j_tier import unavailable_reason as neo4j_unavailable
from tests.support.processes import (
    cli_env,
    kill_everything_of,
    run,
    services_owner,
    start,
    stop,
    wait_until,
)

pytestmark = pytest.mark.heavy(280)


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
        assert first.returncode == 0 and demo_recalled(first.stdout), first.stdout[-3000:]

        second = run(["up", "--graph", "neo4j", "--exit-after-demo"], env, tmp_path, 900)
        output = second.stdout + second.stderr
        assert second.returncode == 0, output[-3000:]
        assert demo_recalled(second.stdout), second.stdout[-3000:]
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
