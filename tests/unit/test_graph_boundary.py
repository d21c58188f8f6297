"""The graph boundary is whole: every Cypher statement of the package lives in workers/graph
(behind GraphStore / DistillStore and the small helpers beside them)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.source_tree  # reads the repository's folders: not in make test-wheel

ROOT = Path(__file__).resolve().parents[2]
PACKAGE_FOLDERS = ("schemas", "producers", "workers", "turngraph")
"""The installed package's real folders (turngraph/ links the first three in)."""

CYPHER = re.compile(
    r"\b(?:OPTIONAL MATCH|MATCH|MERGE|CREATE) \(|\bUNWIND \$|\bDETACH DELETE\b|"
    r"\bRETURN (?:\d|[a-z]\w*\.)|\bCALL (?:db|dbms|apoc)\.|\bSHOW (?:INDEXES|CONSTRAINTS)\b|"
    r"\.execute_query\(|\.run\(\s*[A-Z_]+\b"
)
"""Statement openings and driver calls that carry a statement."""


def _package_files() -> list[Path]:
    linked = {("turngraph", name) for name in PACKAGE_FOLDERS[:3]}
    return [
        path
        for folder in PACKAGE_FOLDERS
        for path in sorted((ROOT / folder).rglob("*.py"))
        if tuple(path.relative_to(ROOT).parts[:2]) not in linked  # read via the real folders
    ]


def test_the_grep_finds_the_statements_it_looks_for() -> None:
    assert CYPHER.search('Q = """\nMATCH (e:Episode {event_id: $id}) RETURN e.uid AS uid\n"""')
    assert CYPHER.search("driver.execute_query(query, database_=db)")
    assert not CYPHER.search("a match (of two words) returns nothing here")


def test_no_cypher_outside_workers_graph() -> None:
    graph = ROOT / "workers" / "graph"
    files = _package_files()
    assert any(f.is_relative_to(graph) for f in files)  # the walk reaches the real folders
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()}"
        for path in files
        if not path.is_relative_to(graph)
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if CYPHER.search(line)
    ]
    assert found == [], "Cypher outside workers/graph:\n" + "\n".join(found)
