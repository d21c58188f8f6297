"""``turngraph doctor`` on a data folder that is not one says so first (issue 35)."""

from __future__ import annotations

from pathlib import Path

from turngraph.cli.doctor_cmd import run_checks
from turngraph.settings import Settings


def test_a_data_folder_path_that_is_a_file_is_named_with_the_fix(tmp_path: Path) -> None:
    # It reported `redis: not configured and no embedded services running`, as if the
    # services were only stopped.
    occupied = tmp_path / "data"
    occupied.write_text("not a folder")
    checks = run_checks(Settings(_env_file=None, data_dir=occupied), smoke=False, smoke_timeout_s=1)
    assert [(c.name, c.status.value) for c in checks] == [("data", "fail")], checks
    assert f"{occupied} is a file, not a folder" in checks[0].detail
    assert "TURNGRAPH_DATA_DIR" in checks[0].fix
