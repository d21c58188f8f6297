"""The top-level folders install as one package, through the build's mapping, not links.

``schemas/``, ``producers/`` and ``workers/`` are ordinary folders at the top of the
repository; pyproject.toml's ``package-dir`` installs them as ``turngraph.schemas``,
``turngraph.producers`` and ``turngraph.workers``. A built wheel must hold every module at
its mapped path, and import from there alone.
"""

from __future__ import annotations

import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.source_tree  # reads the repository's folders: not in make test-wheel

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
PACKAGE_DIRS: dict[str, str] = CONFIG["package-dir"]
SKIPPED_PARTS = {"__pycache__", "node_modules", "typescript"}


def _source_modules() -> dict[str, Path]:
    """Every module of the sources, by the dotted name it installs under."""
    modules = {}
    for package, folder in PACKAGE_DIRS.items():
        for path in (ROOT / folder).rglob("*.py"):
            relative = path.relative_to(ROOT / folder)
            if SKIPPED_PARTS & set(relative.parts):
                continue
            name = ".".join([package, *relative.with_suffix("").parts])
            modules[name.removesuffix(".__init__")] = path
    return modules


def test_no_symlink_is_committed() -> None:
    if not (ROOT / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run(
        ["git", "ls-files", "-s"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout
    links = [line.split("\t")[1] for line in listed.splitlines() if line.startswith("120000")]
    assert links == []


def test_every_package_folder_is_listed_for_the_build() -> None:
    found = set()
    for package, folder in PACKAGE_DIRS.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            if SKIPPED_PARTS & set(relative.parts):
                continue
            found.add(".".join([package, *relative.parts]))
    assert sorted(found) == sorted(CONFIG["packages"])


def test_a_built_wheel_holds_and_imports_every_module_at_its_mapped_path(
    tmp_path: Path,
) -> None:
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "--quiet",
            "--wheel-dir",
            str(tmp_path / "wheel"),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (wheel,) = (tmp_path / "wheel").glob("turngraph-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        archive.extractall(tmp_path / "site")
    modules = _source_modules()
    expected = {
        name.replace(".", "/") + ("/__init__.py" if path.name == "__init__.py" else ".py")
        for name, path in modules.items()
    }
    assert expected - names == set()
    assert "turngraph/schemas/json/bridge_recall_request.schema.json" in names
    # Every file a model folder's checksums name ships (its reference vectors too): a
    # folder missing one is refused at load.
    for sums in sorted(ROOT.glob("workers/embeddings/models/*/SHA256SUMS")):
        folder = f"turngraph/workers/embeddings/models/{sums.parent.name}"
        listed = [line.split()[1] for line in sums.read_text().splitlines() if line.strip()]
        assert {f"{folder}/{name}" for name in listed} - names == set(), folder
    # Every module imports from the unpacked wheel alone: its folder comes before the
    # editable install's finder, and no other copy of the package is on the path there.
    probe = (
        "import importlib, sys\n"
        "site, names = sys.argv[1], sys.argv[2:]\n"
        "for name in names:\n"
        "    module = importlib.import_module(name)\n"
        "    assert module.__file__.startswith(site + '/'), (name, module.__file__)\n"
        "print(len(names))\n"
    )
    # (``__main__`` modules run the command line when imported: they are only listed.)
    importable = sorted(name for name in modules if not name.endswith(".__main__"))
    done = subprocess.run(
        [sys.executable, "-c", probe, str(tmp_path / "site"), *importable],
        cwd=tmp_path,
        env={"PYTHONPATH": str(tmp_path / "site"), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == str(len(importable))
