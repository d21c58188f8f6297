"""Every public module of the package says what it exports: an ``__all__`` of string
literals that names each public function and class it defines, and only names it binds.

Public: the Python modules of ``turngraph/``, ``schemas/``, ``producers/``, ``workers/``
whose name does not start with ``_`` (``__init__`` included), except a package marker that
defines nothing public; generated and vendored folders are left out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.source_tree  # reads the repository's folders: not in make test-wheel

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("turngraph", "schemas", "producers", "workers")
SKIPPED = {"node_modules", "typescript", "__pycache__"}


def public_modules() -> list[Path]:
    return [
        path
        for folder in FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if not SKIPPED & set(path.relative_to(ROOT).parts)
        and (path.name == "__init__.py" or not path.name.startswith("_"))
    ]


def _bound(tree: ast.Module) -> tuple[set[str], set[str]]:
    """Names bound at the top of the module, and the public functions and classes."""
    bound: set[str] = set()
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            bound.add(node.id)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            bound |= {(a.asname or a.name).split(".")[0] for a in node.names}
    for node in tree.body:
        public = not getattr(node, "name", "_").startswith("_")
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and public:
            defined.add(node.name)
    return bound, defined


def exported(tree: ast.Module) -> list[str] | None:
    """The names in the module's ``__all__`` (None when it has none)."""
    for node in tree.body:
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        if isinstance(target, ast.Name) and target.id == "__all__":
            value = getattr(node, "value", None)
            assert isinstance(value, ast.List | ast.Tuple), "__all__ is a literal list"
            names = []
            for element in value.elts:
                assert isinstance(element, ast.Constant) and isinstance(element.value, str)
                names.append(element.value)
            return names
    return None


def _defines_nothing(tree: ast.Module) -> bool:
    body = [n for n in tree.body if not isinstance(n, ast.Expr)]  # the docstring
    return all(isinstance(n, ast.ImportFrom) and n.module == "__future__" for n in body)


def test_the_scan_sees_the_package() -> None:
    assert len(public_modules()) > 150


@pytest.mark.parametrize("path", public_modules(), ids=lambda p: str(p.relative_to(ROOT)))
def test_public_module_has_all(path: Path) -> None:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = exported(tree)
    if names is None:
        assert _defines_nothing(tree), f"{path.relative_to(ROOT)} has no __all__"
        return
    bound, defined = _bound(tree)
    assert sorted(set(names) - bound) == [], "names in __all__ the module never binds"
    assert sorted(defined - set(names)) == [], "public functions or classes not in __all__"
    assert len(names) == len(set(names)), "a name twice in __all__"


def test_the_check_can_fail() -> None:
    tree = ast.parse("def shown(): pass\ndef hidden(): pass\n__all__ = ['shown', 'ghost']\n")
    bound, defined = _bound(tree)
    assert exported(tree) == ["shown", "ghost"]
    assert set(exported(tree) or []) - bound == {"ghost"}
    assert defined - set(exported(tree) or []) == {"hidden"}
    assert not _defines_nothing(ast.parse("x = 1\n"))
