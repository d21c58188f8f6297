"""``bench.ann_cache`` times the replica's own graph warm, in turn and evicted."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from bench import ann_cache


def _vectors(path: Path, rows: int) -> Path:
    data = np.random.default_rng(3).normal(size=(rows, 64)).astype(np.float32)
    data /= np.linalg.norm(data, axis=1, keepdims=True)
    np.savez(path, ids=np.arange(rows), vectors=data)
    return path


def test_reports_each_mode_of_the_replicas_graph(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = _vectors(tmp_path / "v.npz", 2 * 300 + 20)
    args = ["--vectors", str(file), "--rows", "300", "--partitions", "2"]
    assert ann_cache.main([*args, "--queries", "20", "--rounds", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 graphs of 300 rows, 64 dimensions" in out
    result = next(line for line in out.splitlines() if line.startswith("RESULT ann_cache"))
    figures = dict(part.split("=") for part in result.split()[2:])
    for mode in ("warm_ms", "rotate_ms", "evicted_ms"):
        assert float(figures[mode]) > 0, mode
    assert figures["rows"] == "300" and figures["partitions"] == "2"


def test_a_short_vectors_file_says_how_many_rows_it_needs(tmp_path: Path) -> None:
    file = _vectors(tmp_path / "v.npz", 100)
    with pytest.raises(SystemExit):
        ann_cache.main(["--vectors", str(file), "--rows", "300", "--queries", "20"])
