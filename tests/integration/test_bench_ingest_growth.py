"""bench.ingest_growth keeps every round's turns in one graph (what bench.ingest empties
between runs), so a per-turn cost that grows with a user's history shows."""

from __future__ import annotations

import pytest

from bench.ingest_growth import main

pytestmark = [pytest.mark.integration, pytest.mark.heavy(40), pytest.mark.timeout(900)]


def test_each_round_adds_to_the_same_graph(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--graph", "arcadedb", "--rounds", "3", "--turns", "30"])

    lines = capsys.readouterr().out.strip().splitlines()
    result = dict(kv.split("=") for kv in lines[-1].split()[2:])
    assert result["turns_in_graph"] == "90"  # 3 rounds of 30, none emptied
    rounds = [line.split() for line in lines if line.split()[:1] in (["1"], ["2"], ["3"])]
    assert [row[1] for row in rounds] == ["30", "60", "90"]
    assert int(result["most_mentions"]) >= 3  # an entity named in every round
    assert float(result["last_rest_ms_per_turn"]) == float(rounds[-1][-1])
