"""The import layers of docs/architecture.md hold, and a wrong-way import breaks them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.source_tree  # reads the repository's folders: not in make test-wheel

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("schemas", "producers", "workers", "turngraph", "bench")
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    """lint-imports on a package tree laid out as installed (ops/package_tree.py)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    return subprocess.run(
        [str(LINT_IMPORTS), "--config", str(tree / "pyproject.toml"), "--no-cache"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _lay_out(source: Path, dest: Path) -> Path:
    subprocess.run(
        [sys.executable, str(source / "ops" / "package_tree.py"), str(dest)],
        cwd=source,
        check=True,
        capture_output=True,
    )
    return dest


def _copy_sources(dest: Path) -> Path:
    for package in PACKAGES:
        shutil.copytree(
            ROOT / package, dest / package, ignore=shutil.ignore_patterns("*.pyc", "node_modules")
        )
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    (dest / "ops").mkdir()
    shutil.copy(ROOT / "ops" / "package_tree.py", dest / "ops" / "package_tree.py")
    return dest


@pytest.mark.skipif(not LINT_IMPORTS.exists(), reason="import-linter is a dev dependency")
def test_the_layers_hold_on_the_code_as_it_is(tmp_path: Path) -> None:
    result = _lint(_lay_out(ROOT, tmp_path / "tree"))
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
    sources = _copy_sources(tmp_path / "sources")
    target = sources / module
    target.write_text(target.read_text() + f"\n{wrong_way}  # noqa\n")
    result = _lint(_lay_out(sources, tmp_path / "tree"))
    assert result.returncode != 0
    assert "BROKEN" in result.stdout
