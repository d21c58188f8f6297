"""RQ is used through its documented surface; what changes its behaviour is in one module,
``workers/rq_adapter.py``.

Outside that module:

- no class of ours derived from an RQ class (directly or through another of ours)
  overrides a method of RQ's (its constructor aside); inside it, every such override is
  named, with its reason, in the module's ``ADAPTED``;
- no module using RQ imports ``zlib`` or RQ's field decoders (``str_to_date``, ...):
  RQ's stored job fields are read through ``Job``, not decoded by hand;
- no ``"rq:..."`` key literal anywhere; and, the adapter included, no Redis command names
  one of RQ's keys (an argument reaching a ``key``, ``intermediate_queue_key``,
  ``key_for``, ... of RQ's): RQ's lists, registries and hashes change through RQ.

RQ's private names (every ``_name`` RQ's own source defines or assigns: module globals,
methods, instance attributes) are read from the installed RQ. Then every module of ours
outside the adapter is parsed, and these count as contact:

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

import pytest
import rq

pytestmark = pytest.mark.source_tree  # reads the repository's folders: not in make test-wheel

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("schemas", "producers", "workers", "turngraph", "bench")
THE_MODULE = ROOT / "workers" / "rq_adapter.py"
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
    assert found == [], "RQ's private names outside workers/rq_adapter.py:\n" + "\n".join(found)


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


def test_no_rq_key_literal() -> None:
    """RQ's Redis key names are spelt out nowhere (RQ's objects know their keys)."""
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in our_modules()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if RQ_KEY.search(line)
    ]
    assert found == []


RQ_CLASSES = ("Job", "Queue", "BaseRegistry", "BaseWorker", "Worker", "SimpleWorker")
ALLOWED_OVERRIDES = {"__init__"}
"""A constructor taking our own keyword arguments changes nothing of RQ's."""


def rq_method_names() -> set[str]:
    """Every method (and property) of RQ's job, queue, registry and worker classes."""
    names: set[str] = set()
    for path in Path(rq.__file__).parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef) and (
                node.name in RQ_CLASSES or node.name.endswith(("Registry", "Worker", "Queue"))
            ):
                names |= {
                    item.name
                    for item in node.body
                    if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
                }
    return names - ALLOWED_OVERRIDES


def overrides(tree: ast.Module, derived: set[str], methods: set[str]) -> dict[str, int]:
    """``Class.method`` -> line of each RQ method a class of ours derived from RQ's defines."""
    return {
        f"{node.name}.{item.name}": item.lineno
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name in derived
        for item in node.body
        if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and item.name in methods
    }


def test_rq_methods_are_overridden_in_the_adapter_only_each_with_its_reason() -> None:
    from turngraph.workers.rq_adapter import ADAPTED

    methods = rq_method_names()
    assert {"perform_job", "dequeue_job_and_maintain_ttl", "heartbeat", "func"} <= methods
    trees = {p: ast.parse(p.read_text(encoding="utf-8")) for p in our_modules()}
    derived = rq_derived_classes(trees)
    found = [
        f"{path.relative_to(ROOT)}:{line}: overrides RQ's {name}"
        for path, tree in trees.items()
        if path != THE_MODULE
        for name, line in overrides(tree, derived, methods).items()
    ]
    assert found == [], "RQ methods overridden outside workers/rq_adapter.py:\n" + "\n".join(found)
    assert set(overrides(trees[THE_MODULE], derived, methods)) == set(ADAPTED)


REDIS_COMMANDS = {
    "delete", "exists", "expire", "get", "set", "hget", "hgetall", "hmget", "hset", "hdel",
    "hexists", "hincrby", "lrange", "lrem", "llen", "lpush", "rpush", "lpop", "rpop", "ltrim",
    "zadd", "zrem", "zrange", "zrangebyscore", "zscore", "zcard", "sadd", "srem", "smembers",
    "sismember", "xadd", "xrange", "xdel", "unlink", "rename", "type", "ttl", "persist",
}  # fmt: skip
RQ_KEY_ATTRS = {
    "key", "intermediate_queue_key", "key_for", "dependents_key", "dependencies_key",
    "get_key", "redis_queues_keys", "redis_queue_namespace_prefix", "redis_job_namespace_prefix",
    "scheduled_jobs_key", "started_job_registry_key",
}  # fmt: skip


RQ_FIELD_DECODERS = {"str_to_date", "parse_timeout", "decode_redis_hash", "as_text"}
"""RQ's helpers for decoding a stored job hash: its fields are read through ``Job``."""


def rq_key_commands(path: Path, tree: ast.Module) -> list[str]:
    """Redis commands whose arguments reach one of RQ's keys, in a module using RQ; and
    ``zlib`` (RQ compresses job data) or RQ's field decoders imported there."""
    if not _rq_imports(tree):
        return []
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if "zlib" in modules or (isinstance(node, ast.ImportFrom) and node.module == "zlib"):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: imports zlib")
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("rq"):
                for alias in node.names:
                    if alias.name in RQ_FIELD_DECODERS:
                        found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {alias.name}")
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in REDIS_COMMANDS
        ):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                if any(
                    isinstance(inner, ast.Attribute) and inner.attr in RQ_KEY_ATTRS
                    for inner in ast.walk(arg)
                ):
                    found.append(
                        f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)[:80]}"
                    )
                    break
    return found


def test_no_redis_command_names_an_rq_key() -> None:
    """Not even in the adapter: RQ's lists, registries and hashes change through RQ."""
    found = [
        line
        for path in our_modules()
        for line in rq_key_commands(path, ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert found == [], "Redis commands on RQ's keys:\n" + "\n".join(found)


def test_the_scans_find_overrides_and_commands_on_rq_keys() -> None:
    """The rules above catch what they are meant to (so the tests above can fail)."""
    source = """
import zlib
from rq import SimpleWorker, Queue
from rq.utils import str_to_date
from rq.job import Job
class W(SimpleWorker):
    def __init__(self):
        pass
    def perform_job(self, job, queue):
        self.connection.lrem(queue.intermediate_queue_key, 0, job.id)
def f(conn, queue, job_id):
    conn.hget(Job.key_for(job_id), "data")
    conn.zrange(queue.failed_job_registry.key, 0, -1)
    conn.hget("turngraph:own", "field")
"""
    tree = ast.parse(source)
    assert overrides(tree, {"W"}, rq_method_names()) == {"W.perform_job": 9}
    found = {line.split(": ", 1)[1] for line in rq_key_commands(ROOT / "x.py", tree)}
    assert found == {
        "imports zlib",
        "str_to_date",
        "self.connection.lrem(queue.intermediate_queue_key, 0, job.id)",
        "conn.hget(Job.key_for(job_id), 'data')",
        "conn.zrange(queue.failed_job_registry.key, 0, -1)",
    }
