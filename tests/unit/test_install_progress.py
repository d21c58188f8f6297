"""``make install`` (what running needs) and ``make install-dev`` (the test toolchain) say
what they are doing: a numbered line per step, and pip's own output for the long ones, not
a silent minute."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _dry_run(target: str) -> list[str]:
    return subprocess.run(
        ["make", "--dry-run", "--always-make", target],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout.splitlines()


def _steps(lines: list[str]) -> list[tuple[int, int]]:
    numbered = [re.match(r'echo "==> \[(\d)/(\d)\] ', line) for line in lines]
    return [(int(m.group(1)), int(m.group(2))) for m in numbered if m]


def _counted_one_by_one(steps: list[tuple[int, int]]) -> bool:
    return bool(steps) and steps == [(n, len(steps)) for n in range(1, len(steps) + 1)]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_is_lean_and_announces_each_step() -> None:
    """What running needs: the package and its runtime dependencies, nothing of the tests."""
    lines = _dry_run("install")
    assert _counted_one_by_one(_steps(lines))
    pip_installs = [line for line in lines if "pip install" in line and "-e ." in line]
    assert len(pip_installs) == 1
    assert "[dev]" not in pip_installs[0]
    assert not re.search(r"(\s-q\b|--quiet)", pip_installs[0].split("pip install", 1)[1])
    assert not [line for line in lines if "npm ci" in line or "apt-get" in line]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_install_dev_adds_the_test_toolchain_with_progress() -> None:
    lines = _dry_run("install-dev")
    runtime = _steps(_dry_run("install"))
    assert _steps(lines)[: len(runtime)] == runtime  # the lean install first, then its own
    assert _counted_one_by_one(_steps(lines)[len(runtime) :])
    dev_install = [line for line in lines if "pip install" in line and ".[dev]" in line]
    assert len(dev_install) == 1
    assert not re.search(r"(\s-q\b|--quiet)", dev_install[0].split("pip install", 1)[1])
    npm = [line for line in lines if "npm ci" in line]
    assert npm and not any("--silent" in line for line in npm)
