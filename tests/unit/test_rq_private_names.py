"""RQ's private names are touched in one module only: ``producers/rq_internals.py``.

RQ's private names (every ``_name`` RQ's own source defines or assigns: module globals,
methods, instance attributes) are read from the installed RQ. Then every module of ours
outside ``rq_internals`` is parsed, and these count as contact:

- importing a private name from ``rq``;
- in a class of ours derived from an RQ class (directly or through another of ours):
  overriding one of RQ's private methods, or reaching a private name through ``self``
  (``self._shutdown_requested_date``, ``self.scheduler._process``);
- in a module that imports ``rq``: ``anything._name`` on an object that is not ``self`` of
  a class of ours, and ``getattr``/``setattr``/``hasattr`` with a private name (a literal
  or an f-string starting with ``_``).

The same goes for RQ's Redis layout: no ``"rq:..."`` key literal outside that module.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import rq

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("schemas", "producers", "workers", "turngraph", "bench")
THE_MODULE = ROOT / "producers" / "rq_internals.py"
ATTR_CALLS = {"getattr", "setattr", "hasattr", "delattr"}
RQ_KEY = re.compile(r"""["']rq:[a-z]""")


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def rq_private_names() -> set[str]:
    names: set[str] = set()
    for path in Path(rq.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            name = None
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            if name and _is_private(name):
                names.add(name)
    return names


def our_modules() -> Iterator[Path]:
    for folder in SCANNED:
        yield from sorted((ROOT / folder).rglob("*.py"))


def _rq_imports(tree: ast.Module) -> set[str]:
    """Local names bound to something imported from rq."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rq":
            names |= {alias.asname or alias.name for alias in node.names}
        elif isinstance(node, ast.Import):
            names |= {a.asname or a.name for a in node.names if a.name.split(".")[0] == "rq"}
    return names


def _base_names(cls: ast.ClassDef) -> set[str]:
    return {ast.unparse(base).split(".")[-1] for base in cls.bases}


def rq_derived_classes(trees: dict[Path, ast.Module]) -> set[str]:
    """Names of our classes that derive from an RQ class, through any of ours."""
    classes = [
        (node, _rq_imports(tree))
        for tree in trees.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
    ]
    derived: set[str] = set()
    changed = True
    while changed:
        changed = False
        for cls, from_rq in classes:
            if cls.name not in derived and _base_names(cls) & (from_rq | derived):
                derived.add(cls.name)
                changed = True
    return derived


def _root(node: ast.expr) -> ast.expr:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node


def contacts(path: Path, tree: ast.Module, private: set[str], derived: set[str]) -> list[str]:
    found = []
    seen: set[int] = set()
    imports_rq = bool(_rq_imports(tree))

    def hit(node: ast.AST, what: str) -> None:
        if id(node) not in seen:  # one report per node, whichever rule saw it first
            seen.add(id(node))
            found.append(f"{path.relative_to(ROOT)}:{getattr(node, 'lineno', 0)}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "rq":
            for alias in node.names:
                if _is_private(alias.name):
                    hit(node, f"imports {alias.name} from {node.module}")
        if isinstance(node, ast.ClassDef):
            rq_class = node.name in derived
            for inner in ast.walk(node):
                if not rq_class:
                    break
                if isinstance(inner, ast.FunctionDef) and inner.name in private:
                    hit(inner, f"overrides RQ's private {inner.name}")
                if (
                    isinstance(inner, ast.Attribute)
                    and inner.attr in private
                    and isinstance(root := _root(inner), ast.Name)
                    and root.id == "self"
                ):
                    hit(inner, f"reaches RQ's private {inner.attr}")
        if not imports_rq:
            continue
        if (
            isinstance(node, ast.Attribute)
            and _is_private(node.attr)
            and node.attr in private
            and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
        ):
            hit(node, f"reaches {ast.unparse(node)}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTR_CALLS
            and len(node.args) >= 2
        ):
            name = node.args[1]
            literal = isinstance(name, ast.Constant) and _is_private(str(name.value))
            formatted = (
                isinstance(name, ast.JoinedStr)
                and bool(name.values)
                and isinstance(first := name.values[0], ast.Constant)
                and str(first.value).startswith("_")
            )
            if literal or formatted:
                hit(node, f"{node.func.id} of a private name")
    return found


def test_rq_private_names_only_in_the_one_module() -> None:
    private = rq_private_names()
    assert {"_execute", "_shutdown_requested_date", "_process"} <= private  # the scan sees RQ
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in our_modules()}
    derived = rq_derived_classes(trees)
    assert {"StoppableWorker", "TrustedJob"} <= derived
    found = [
        line
        for path, tree in trees.items()
        if path != THE_MODULE
        for line in contacts(path, tree, private, derived)
    ]
    assert found == [], "RQ's private names outside producers/rq_internals.py:\n" + "\n".join(found)


def test_the_scan_finds_each_kind_of_contact() -> None:
    """The rules above catch what they are meant to (so the test above can fail)."""
    source = """
from rq import SimpleWorker
from rq.job import Job, _private_thing
class W(SimpleWorker):
    def _execute(self):
        return self._shutdown_requested_date, self.scheduler._process
class J(Job):
    pass
def f(job):
    return job._process, getattr(job, "_status"), getattr(job, f"_{job}")
"""
    tree = ast.parse(source)
    path = ROOT / "x.py"
    found = contacts(path, tree, rq_private_names() | {"_private_thing"}, {"W", "J"})
    assert [line.split(": ", 1)[1] for line in found] == [
        "imports _private_thing from rq.job",
        "overrides RQ's private _execute",
        "reaches RQ's private _shutdown_requested_date",
        "reaches RQ's private _process",
        "reaches job._process",
        "getattr of a private name",
        "getattr of a private name",
    ]


def test_rq_keys_only_in_the_one_module() -> None:
    """RQ's Redis key names are spelt out only in ``rq_internals`` (others use its
    constants or RQ's public ``key`` attributes)."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in our_modules()
        if path != THE_MODULE
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if RQ_KEY.search(line)
    ]
    assert found == []
