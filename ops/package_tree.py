"""Lay the package out as it installs, for the tools that read packages from folders.

The build maps the top-level folders into one package (pyproject.toml's
``[tool.setuptools] package-dir``: ``schemas/`` is ``turngraph.schemas``, and so on).
Python imports that mapping through setuptools' editable finder, but import-linter (grimp)
and mypy find a package's modules by walking its folder, where ``turngraph/`` holds no
``workers/``. This copies each mapped folder to where it installs (and ``bench/`` beside
the package), so those tools read the same modules under the same names as Python does.

Standard library only: ``python ops/package_tree.py DEST`` (DEST is emptied first).
"""

from __future__ import annotations

import shutil
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc", "node_modules", "typescript")


def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """The build's package-dir mapping: dotted package -> folder relative to ``root``."""
    config = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    return dict(config["tool"]["setuptools"]["package-dir"])


def lay_out(dest: Path, root: Path = ROOT) -> Path:
    """Copy ``root``'s mapped folders and ``bench/`` into ``dest`` as installed; return it."""
    if dest.exists():
        shutil.rmtree(dest)
    # Parents before children, so a child folder lands inside its copied parent.
    for package, folder in sorted(package_dirs(root).items(), key=lambda item: item[0]):
        target = dest.joinpath(*package.split("."))
        shutil.copytree(root / folder, target, ignore=SKIPPED, dirs_exist_ok=True)
    shutil.copytree(root / "bench", dest / "bench", ignore=SKIPPED)
    shutil.copy(root / "pyproject.toml", dest / "pyproject.toml")
    return dest


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python ops/package_tree.py DEST")
    print(lay_out(Path(sys.argv[1])))
