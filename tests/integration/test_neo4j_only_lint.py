"""Neo4j-only statements and the saved Browser queries, validated by Neo4j's own parser.

They cannot run on the embedded engine, so ``@neo4j-cypher/language-support``
(``lintCypherQuery``, under Node, offline) checks them instead. Needs
``npm ci --prefix ops/cypher-lint``; skipped only when Node itself is missing.
The portable statements (run on the embedded engine by the other tests) are linted too:
that is the only check here that Neo4j 5 itself accepts them.
Everything is linted in one Node run (loading the parser takes a second).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence

import pytest

from tests.support.cypher_lint import (
    INSTALL_COMMAND,
    REPO_ROOT,
    CypherText,
    LintResult,
    lint,
    node_executable,
    saved_queries,
)
from turngraph.inspection.browser_style import STRUCTURAL_NODES, STRUCTURAL_RELATIONSHIPS
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.workers.graph.neo4j_only import neo4j_only_statements
from turngraph.workers.graph.schema import schema_statements

SAVED_QUERIES = REPO_ROOT / "ops" / "neo4j" / "saved-queries.cypher"

pytestmark = [
    pytest.mark.skipif(
        node_executable() is None,
        reason=f"node is not installed: Neo4j-only Cypher not linted (install Node 20+, "
        f"then `{INSTALL_COMMAND}`)",
    ),
    pytest.mark.timeout(600),  # the module's one Node run has a wall bound of 540 s
]

MODEL_LABELS = {*ONTOLOGY.labels(), *(s.label for s in STRUCTURAL_NODES)}
MODEL_TYPES = {*ONTOLOGY.relationship_types(), *(s.type for s in STRUCTURAL_RELATIONSHIPS)}

STATEMENTS = [
    CypherText(f"statement:{s.name}", s.cypher)
    for s in neo4j_only_statements(
        ONTOLOGY.labels(), ONTOLOGY.relationship_types(), embedding_dimension=256
    )
]
QUERIES = [
    CypherText(f"query:{q.name}", q.text, q.parameters, q.console_commands)
    for q in saved_queries(SAVED_QUERIES.read_text())
]
PORTABLE_MODULES = (
    "turngraph.workers.graph.statements",
    "turngraph.workers.graph.subgraph",
    "turngraph.workers.graph.forget",
    "turngraph.inspection.export",
    "turngraph.workers.recall.bootstrap",
    "turngraph.workers.graph.vectors",
)
"""Modules whose upper-case string constants are Cypher the project sends."""
TEMPLATE_SAMPLE = {
    "label": "Decision",
    "source_label": "Decision",
    "target_label": "File",
    "rel_type": "APPLIES_TO",
    "prop": "session_id",
    "labels": ":Decision",
    "key": "uid",
}
_CYPHER_START = re.compile(r"^\s*(MATCH|OPTIONAL|UNWIND|MERGE|CREATE|CALL|WITH|RETURN)\b")
_PARAMETER = re.compile(r"\$([A-Za-z_][A-Za-z0-9_]*)")


def portable_statements() -> list[CypherText]:
    found = {f"schema:{i}": text for i, text in enumerate(schema_statements(ONTOLOGY.labels()))}
    for name in PORTABLE_MODULES:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if attr.isupper() and isinstance(value, str) and _CYPHER_START.match(value):
                if any(f"{{{field}}}" in value for field in TEMPLATE_SAMPLE):
                    value = value.format(**TEMPLATE_SAMPLE)
                found[f"{name}.{attr}"] = value
    return [
        CypherText(f"portable:{name}", text, dict.fromkeys(_PARAMETER.findall(text), "x"))
        for name, text in found.items()
    ]


PORTABLE = portable_statements()
BROKEN = [
    # The real first statement with its closing bracket lost.
    CypherText("broken:truncated", STATEMENTS[0].text.replace("]", "", 1)),
    CypherText(
        "broken:no-list",
        "CREATE FULLTEXT INDEX episode_text IF NOT EXISTS FOR (e:Episode) ON EACH e.content",
    ),
    CypherText("broken:keyword", "CREAT FULLTEXT INDEX t FOR (e:Episode) ON EACH [e.content]"),
    CypherText(
        "broken:saved-query",
        QUERIES[0].text.replace("RETURN", "RETRUN", 1),
        QUERIES[0].parameters,
        console_commands=True,
    ),
    CypherText("broken:undeclared-parameter", "MATCH (e:Episode {event_id: $nope}) RETURN e"),
]
TYPO = CypherText("typo:label", "MATCH (e:Episod) RETURN e")


@pytest.fixture(scope="module")
def results() -> dict[str, LintResult]:
    texts = [*STATEMENTS, *QUERIES, *PORTABLE, *BROKEN, TYPO]
    linted = lint(texts, MODEL_LABELS, MODEL_TYPES)
    assert [r.name for r in linted] == [t.name for t in texts]
    return {r.name: r for r in linted}


MODEL_HINT = (
    "\n(known labels and types: the ontology plus STRUCTURAL_NODES / STRUCTURAL_RELATIONSHIPS"
    " in turngraph/inspection/browser_style.py, which also give them a Browser style)"
)


def problems(results: Sequence[LintResult], *, warnings_fail: bool) -> list[str]:
    return [
        f"{r.name}: {d.severity} at {d.line}:{d.character}: {d.message}"
        for r in results
        for d in (r.diagnostics if warnings_fail else r.errors)
    ]


def test_every_neo4j_only_statement_parses_in_neo4j(results: dict[str, LintResult]) -> None:
    assert len(STATEMENTS) >= 3
    found = problems([results[t.name] for t in STATEMENTS], warnings_fail=True)
    assert not found, "\n".join(found)


@pytest.mark.parametrize("broken", BROKEN, ids=lambda t: t.name)
def test_a_broken_statement_fails_the_lint(
    broken: CypherText, results: dict[str, LintResult]
) -> None:
    found = problems([results[broken.name]], warnings_fail=False)
    assert found, f"the linter accepted a broken statement: {broken.text}"


def test_a_misspelt_label_is_reported(results: dict[str, LintResult]) -> None:
    assert any("Episod" in w.message for w in results[TYPO.name].warnings)


def test_saved_queries_parse_and_use_only_the_model(results: dict[str, LintResult]) -> None:
    names = [q.name for q in QUERIES]
    assert len(names) == len(set(names)) >= 6
    found = problems([results[q.name] for q in QUERIES], warnings_fail=True)
    assert not found, "\n".join(found) + MODEL_HINT


def test_portable_statements_parse_in_neo4j_too(results: dict[str, LintResult]) -> None:
    assert len(PORTABLE) > 20
    found = problems([results[t.name] for t in PORTABLE], warnings_fail=True)
    assert not found, "\n".join(found) + MODEL_HINT
