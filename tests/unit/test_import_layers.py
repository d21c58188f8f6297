"""The import layers of docs/architecture.md hold, and a wrong-way import breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "producers", "workers", "turngraph", "bench")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(root: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(root / "pyproject.toml"), "--no-cache"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _copy_tree(dest: Path) -> Path:
    # turngraph/ links schemas/, producers/ and workers/ in: the links are copied as links.
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package,
            dest / package,
            symlinks=True,
            ignore=shutil.ignore_patterns("*.pyc", "node_modules"),
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is a dev dependency")
def test_the_layers_hold_on_the_code_as_it_is() -> None:
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is a dev dependency")
@pytest.mark.parametrize(
    ("module", "wrong_way"),
    [
        ("schemas/recall.py", "import turngraph.settings"),
        ("producers/scopes.py", "import turngraph.workers.graph.writer"),
        ("workers/recall/text.py", "import turngraph.workers.ingest.pipeline"),
        ("schemas/turn_event.py", "import redis"),
        ("workers/ingest/changes.py", "import turngraph.workers.recall.memory"),
        ("workers/graph/store.py", "import turngraph.workers.ingest.pipeline"),
        ("turngraph/settings.py", "import bench.report"),
    ],
)
def test_a_wrong_way_import_breaks_a_contract(tmp_path: Path, module: str, wrong_way: str) -> None:
    tree = _copy_tree(tmp_path)
    target = tree / module
    target.write_text(target.read_text() + f"\n{wrong_way}  # noqa\n")
    result = _lint(tree)
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
