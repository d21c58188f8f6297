"""The extraction schema stays within what real structured-output engines accept, so an
ontology change cannot break them: OpenAI's strict-mode rules and limits (checked here
by walking the schema) and xgrammar, vLLM's default grammar backend (compiled for real).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from turngraph.schemas.ontology import ONTOLOGY, extraction_json_schema, response_format
from turngraph.workers.extraction.prompts import ExtractionAnswer

SCHEMA = extraction_json_schema(ONTOLOGY)

# OpenAI structured outputs, strict mode (platform docs, "Supported schemas").
MAX_OBJECT_PROPERTIES = 5_000
MAX_NESTING = 10
MAX_ENUM_VALUES = 1_000
MAX_TOTAL_STRING_CHARS = 120_000
"""Property names, definition names, enum and const values, all together."""
MAX_LARGE_ENUM_CHARS = 15_000
"""For one enum of more than 250 values, the length of its values together."""
SUPPORTED_KEYWORDS = frozenset(
    {"type", "properties", "required", "additionalProperties", "items", "enum", "const",
     "description", "anyOf", "$ref", "$defs", "title"}
)  # fmt: skip


def objects(node: Any, depth: int = 1) -> Iterator[tuple[dict[str, Any], int]]:
    """Every schema node with its nesting depth (``$defs`` resolved by reference once)."""
    if not isinstance(node, dict):
        return
    yield node, depth
    for key in ("properties", "$defs"):
        for child in node.get(key, {}).values():
            yield from objects(child, depth + (key == "properties"))
    if "items" in node:
        yield from objects(node["items"], depth)
    for child in node.get("anyOf", []):
        yield from objects(child, depth)


def nesting(node: dict[str, Any], defs: dict[str, Any], depth: int = 1) -> int:
    """Object nesting depth through ``$ref``s (no recursion in our schema)."""
    if "$ref" in node:
        return nesting(defs[node["$ref"].rsplit("/", 1)[-1]], defs, depth)
    if "items" in node:
        return nesting(node["items"], defs, depth)
    props = node.get("properties", {})
    return max([depth] + [nesting(p, defs, depth + 1) for p in props.values()])


def test_sent_as_strict_json_schema() -> None:
    fmt = response_format(ONTOLOGY)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    assert len(fmt["json_schema"]["name"]) <= 64


def test_every_object_is_closed_and_requires_all_its_properties() -> None:
    assert SCHEMA["type"] == "object" and "anyOf" not in SCHEMA  # root: an object
    for node, _ in objects(SCHEMA):
        assert set(node) <= SUPPORTED_KEYWORDS, set(node) - SUPPORTED_KEYWORDS
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert node["required"] == list(node["properties"])


def test_within_openai_strict_mode_limits() -> None:
    nodes = [node for node, _ in objects(SCHEMA)]
    properties = sum(len(n.get("properties", {})) for n in nodes)
    enums = [n["enum"] for n in nodes if "enum" in n]
    names = [k for n in nodes for k in n.get("properties", {})] + list(SCHEMA["$defs"])
    strings = sum(map(len, names)) + sum(len(str(v)) for e in enums for v in e)
    assert properties <= MAX_OBJECT_PROPERTIES
    assert nesting(SCHEMA, SCHEMA["$defs"]) <= MAX_NESTING
    assert sum(map(len, enums)) <= MAX_ENUM_VALUES
    assert strings <= MAX_TOTAL_STRING_CHARS
    for values in enums:
        if len(values) > 250:
            assert sum(len(str(v)) for v in values) <= MAX_LARGE_ENUM_CHARS


VALID = {
    "turns": [
        {
            "event_id": "e1",
            "entities": [
                {"type": "File", "name": "a.py", "aliases": [], "summary": "",
                 "attributes": [{"key": "k", "value": "v"}]},
                {"type": "PullRequest", "name": "#4", "aliases": [], "summary": "",
                 "attributes": []},
            ],
            "facts": [
                {"relation": "MODIFIES", "source": {"type": "PullRequest", "name": "#4"},
                 "target": {"type": "File", "name": "a.py"}, "statement": ""}
            ],
        }
    ]
}  # fmt: skip


def test_schema_compiles_with_xgrammar_and_constrains_the_answer() -> None:
    xgr = pytest.importorskip("xgrammar", reason="xgrammar is a dev dependency (CI has it)")
    ExtractionAnswer.model_validate(VALID)  # what the engine accepts, we can read
    vocab = [chr(i) for i in range(32, 127)] + ["\n", "\t"]  # a byte-level toy tokenizer
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo(vocab))
    compiled = compiler.compile_json_schema(json.dumps(SCHEMA), strict_mode=True)

    def accepts(answer: dict[str, Any]) -> bool:
        return bool(xgr.GrammarMatcher(compiled).accept_string(json.dumps(answer)))

    assert accepts(VALID)
    unknown_type = json.loads(json.dumps(VALID).replace('"File"', '"Spaceship"'))
    assert not accepts(unknown_type)
    extra_field = json.loads(json.dumps(VALID))
    extra_field["turns"][0]["mood"] = "happy"
    assert not accepts(extra_field)
