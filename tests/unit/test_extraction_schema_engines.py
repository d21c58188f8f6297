"""The extraction schema stays within what real structured-output engines accept, so an
ontology change cannot break them: OpenAI's strict-mode rules and limits (checked here
by walking the schema) and llguidance, the grammar engine of vLLM's ``guidance`` backend,
llama.cpp (``-DLLAMA_LLGUIDANCE=ON``) and SGLang, compiled for real the way vLLM compiles
a ``json_schema`` request. llguidance is a Rust wheel without torch (xgrammar, vLLM's
default backend, pulls torch and CUDA: 5 GB in a test environment).
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


def test_schema_compiles_with_llguidance_and_constrains_the_answer() -> None:
    llg = pytest.importorskip("llguidance", reason="llguidance is a dev dependency")
    ExtractionAnswer.model_validate(VALID)  # what the engine accepts, we can read
    tokenizer = llg.LLTokenizer("byte")  # one token per byte: the answer's text, exactly
    # As vLLM's guidance backend serialises a json_schema request (any whitespace allowed).
    grammar = llg.LLMatcher.grammar_from_json_schema(
        json.dumps(SCHEMA), defaults={"whitespace_flexible": True}
    )
    is_error, messages = llg.LLMatcher.validate_grammar_with_warnings(grammar)
    assert not is_error, messages

    def accepts(answer: dict[str, Any]) -> bool:
        matcher = llg.LLMatcher(tokenizer, grammar)
        assert not matcher.is_error(), matcher.get_error()
        tokens = tokenizer.tokenize_bytes(json.dumps(answer, indent=1).encode())
        return matcher.try_consume_tokens(tokens) == len(tokens) and matcher.is_accepting()

    assert accepts(VALID)
    unknown_type = json.loads(json.dumps(VALID).replace('"File"', '"Spaceship"'))
    assert not accepts(unknown_type)
    extra_field = json.loads(json.dumps(VALID))
    extra_field["turns"][0]["mood"] = "happy"
    assert not accepts(extra_field)
    missing_field = json.loads(json.dumps(VALID))
    del missing_field["turns"][0]["facts"]
    assert not accepts(missing_field)
