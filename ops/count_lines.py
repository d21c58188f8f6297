"""Count the production lines of Python: ``python ops/count_lines.py``.

A line counts when it is neither blank nor a comment (docstrings count), in the Python
modules of ``turngraph/``, ``schemas/``, ``producers/`` and ``workers/``; generated and
vendored folders (``node_modules``, the TypeScript client) are left out. Prints one
``RESULT`` line and a table of the folders; ``exports`` is how many of the lines are
``__all__`` declarations (``tests/unit/test_public_modules.py`` asks for one per module).
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

__all__ = ["FOLDERS", "count_exports", "count_file", "count_lines"]

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("turngraph", "schemas", "producers", "workers")
SKIPPED = {"node_modules", "typescript", "__pycache__"}


def count_file(path: Path) -> int:
    """Lines of ``path`` that are neither blank nor a comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))


def count_exports(path: Path) -> int:
    """Lines of ``path``'s ``__all__`` declaration."""
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            return (node.end_lineno or node.lineno) - node.lineno + 1
    return 0


def _modules(root: Path, folder: str) -> list[Path]:
    paths = (root / folder).rglob("*.py")
    return [path for path in paths if not SKIPPED & set(path.relative_to(root).parts)]


def count_lines(root: Path = ROOT) -> dict[str, int]:
    """Production lines per folder."""
    return {folder: sum(count_file(p) for p in _modules(root, folder)) for folder in FOLDERS}


def main() -> int:
    counts = count_lines(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    for folder, lines in counts.items():
        print(f"{folder:<10} {lines:>7}")
    root = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT
    exports = sum(count_exports(p) for folder in FOLDERS for p in _modules(root, folder))
    total = sum(counts.values())
    print(f"{'total':<10} {total:>7}")
    print(f"RESULT count_lines total={total} exports={exports} without_exports={total - exports}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
