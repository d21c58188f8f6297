"""``make install`` says what it is doing: a numbered line per step, and pip's own output
for the long one (the embedded servers' wheels), not a silent minute."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_announces_each_step_and_shows_pip_progress() -> None:
    dry_run = subprocess.run(
        ["make", "--dry-run", "--always-make", "install"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()
    steps = [line for line in dry_run if re.match(r'echo "==> \[\d/\d\] ', line)]
    assert [re.search(r"\[(\d)/(\d)\]", step).groups() for step in steps] == [  # type: ignore[union-attr]
        (str(n), "5") for n in range(1, 6)
    ]
    project_install = [line for line in dry_run if "pip install" in line and ".[dev]" in line]
    assert len(project_install) == 1
    assert not re.search(r"(\s-q\b|--quiet)", project_install[0]), project_install[0]
    npm = [line for line in dry_run if "npm ci" in line]
    assert npm and not any("--silent" in line for line in npm)
