"""bench.ingest reports a fresh server's cold figure and, beside it, the steady figure: the
same one-worker run repeated in the same server (docs/operations.md, "Where a turn's time
goes"); the acceptance line on graph CPU is read from the steady one."""

from __future__ import annotations

import pytest

from bench.ingest import main

pytestmark = [pytest.mark.integration, pytest.mark.heavy(60), pytest.mark.timeout(900)]


def test_the_one_worker_run_is_repeated_in_the_same_server_and_reported_as_steady(
    capsys: pytest.CaptureFixture[str],
) -> None:
    main(["--turns", "30", "--embedding", "none", "--graph", "arcadedb", "--steady-rounds", "2"])

    lines = capsys.readouterr().out.strip().splitlines()
    rows = [line.split()[1:3] for line in lines if line.startswith("arcadedb ")]
    assert rows == [["1", "cold"], ["2", "cold"], ["empty", "30"], ["1", "repeat"], ["1", "steady"]]
    result = dict(kv.split("=") for kv in lines[-1].split()[2:])
    assert float(result["arcadedb_graph_cpu_ms_per_turn"]) > 0  # the cold figure, as before
    assert float(result["arcadedb_graph_cpu_ms_per_turn_steady"]) > 0
    assert float(result["arcadedb_one_worker_turns_per_s_steady"]) > 0
    steady_jit = float(result["arcadedb_graph_jit_cpu_ms_per_turn_steady"])
    assert 0 <= steady_jit <= float(result["arcadedb_graph_cpu_ms_per_turn_steady"])
