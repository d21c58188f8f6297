"""Count the production lines of Python: ``python ops/count_lines.py``.

A line counts when it is neither blank nor a comment (docstrings count), in the Python
modules of ``turngraph/``, ``schemas/``, ``producers/`` and ``workers/``; generated and
vendored folders (``node_modules``, the TypeScript client) are left out. Prints one
``RESULT`` line and a table of the folders.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["FOLDERS", "count_file", "count_lines"]

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("turngraph", "schemas", "producers", "workers")
SKIPPED = {"node_modules", "typescript", "__pycache__"}


def count_file(path: Path) -> int:
    """Lines of ``path`` that are neither blank nor a comment."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return sum(1 for line in lines if line.strip() and not line.lstrip().startswith("#"))


def count_lines(root: Path = ROOT) -> dict[str, int]:
    """Production lines per folder."""
    return {
        folder: sum(
            count_file(path)
            for path in (root / folder).rglob("*.py")
            if not SKIPPED & set(path.relative_to(root).parts)
        )
        for folder in FOLDERS
    }


def main() -> int:
    counts = count_lines(Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT)
    for folder, lines in counts.items():
        print(f"{folder:<10} {lines:>7}")
    print(f"{'total':<10} {sum(counts.values()):>7}")
    print(f"RESULT count_lines total={sum(counts.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
