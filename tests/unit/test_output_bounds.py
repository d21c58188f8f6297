"""The bounded schemas (sent to grammar-enforcing servers: llama.cpp, llama-cpp-python,
Ollama) have a longest answer, and it fits the output cap the call asks for (issue 25).

Every string carries ``maxLength`` with one-byte characters, every array ``maxItems``;
the longest answer each schema allows is built, checked against the schema (jsonschema,
and llguidance compiling it as a grammar with one token per byte) and measured against
``max_answer_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import pytest

from turngraph.schemas.ontology import ONTOLOGY, extraction_json_schema
from turngraph.schemas.summaries import SummaryContent, summary_json_schema
from turngraph.workers.extraction.prompts import (
    LIMIT_LEVELS,
    batch_schema,
    fitting_schema,
    turns_fitting,
)
from turngraph.workers.maintenance.llm_summary import bounded_summary_schema
from turngraph.workers.output_bounds import (
    SAFE_CHARACTER,
    UnboundedSchemaError,
    max_answer_chars,
    max_answer_tokens,
)

SCHEMA = extraction_json_schema(ONTOLOGY)
IDS = [f"t_{i:032x}" for i in range(8)]


def nodes(node: Any, defs: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every schema node, ``$ref``s followed."""
    if "$ref" in node:
        yield from nodes(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
        return
    yield node
    for child in node.get("properties", {}).values():
        yield from nodes(child, defs)
    if "items" in node:
        yield from nodes(node["items"], defs)


def longest(node: Any, defs: dict[str, Any]) -> Any:
    """The longest value the node allows: every array full, every string at its limit."""
    if "$ref" in node:
        return longest(defs[node["$ref"].rsplit("/", 1)[-1]], defs)
    if "enum" in node:
        return max(node["enum"], key=lambda value: len(json.dumps(value)))
    if node["type"] == "object":
        return {name: longest(child, defs) for name, child in node["properties"].items()}
    if node["type"] == "array":
        return [longest(node["items"], defs) for _ in range(node["maxItems"])]
    return "~" * node["maxLength"]


def assert_bounded(schema: dict[str, Any]) -> None:
    defs = schema.get("$defs", {})
    for node in nodes(schema, defs):
        if node.get("type") == "array":
            assert "maxItems" in node, node
        if node.get("type") == "string" and "enum" not in node:
            assert "maxLength" in node, node
            assert (
                node["pattern"] == f"^{SAFE_CHARACTER}{{{node['minLength']},{node['maxLength']}}}$"
            )


def grammar_accepts(schema: dict[str, Any], text: str) -> bool:
    """llguidance, one token per byte: the text is a whole answer the grammar allows."""
    llg = pytest.importorskip("llguidance", reason="llguidance is a dev dependency")
    tokenizer = llg.LLTokenizer("byte")
    grammar = llg.LLMatcher.grammar_from_json_schema(
        json.dumps(schema), defaults={"whitespace_flexible": False}
    )
    matcher = llg.LLMatcher(tokenizer, grammar)
    assert not matcher.is_error(), matcher.get_error()
    tokens = tokenizer.tokenize_bytes(text.encode())
    return matcher.try_consume_tokens(tokens) == len(tokens) and matcher.is_accepting()


@pytest.mark.parametrize("turns", [1, 2, 4, 8])
@pytest.mark.parametrize("cap", [512, 1024, 4096, None])
def test_the_chosen_extraction_schema_is_bounded_and_its_longest_answer_fits(
    turns: int, cap: int | None
) -> None:
    fit = fitting_schema(SCHEMA, IDS[:turns], cap)
    if fit is None:  # not even empty answers fit: the extractor sends fewer turns
        empty = batch_schema(SCHEMA, IDS[:turns], bounded=True, limits=LIMIT_LEVELS[-1])
        assert cap is not None and max_answer_tokens(empty) > cap
        assert turns > turns_fitting(SCHEMA, cap, 8)
        return
    schema, bound = fit
    assert_bounded(schema)
    assert cap is None or bound <= cap
    answer = longest(schema, schema["$defs"])
    jsonschema.validate(answer, schema)
    assert len(answer["turns"]) == turns
    text = json.dumps(answer, separators=(", ", ": "))  # a space after every separator
    assert len(text.encode()) <= max_answer_chars(schema) < bound
    assert grammar_accepts(schema, json.dumps(answer, separators=(",", ":")))


def test_a_longer_string_or_list_than_the_schema_allows_is_refused() -> None:
    schema, _ = fitting_schema(SCHEMA, IDS[:1], 1024) or ({}, 0)
    answer = longest(schema, schema["$defs"])
    name = answer["turns"][0]["entities"][0]["name"]
    too_long = json.loads(json.dumps(answer))
    too_long["turns"][0]["entities"][0]["name"] = name + "~"
    assert not grammar_accepts(schema, json.dumps(too_long, separators=(",", ":")))
    too_many = json.loads(json.dumps(answer))
    too_many["turns"][0]["entities"].append(answer["turns"][0]["entities"][0])
    assert not grammar_accepts(schema, json.dumps(too_many, separators=(",", ":")))
    escaped = json.loads(json.dumps(answer))
    escaped["turns"][0]["entities"][0]["name"] = 'say "hi"'  # one character, two bytes
    assert not grammar_accepts(schema, json.dumps(escaped, separators=(",", ":")))


def test_levels_go_from_rich_to_empty_and_small_caps_carry_fewer_turns() -> None:
    bounds = [
        max_answer_tokens(batch_schema(SCHEMA, IDS[:1], bounded=True, limits=limits))
        for limits in LIMIT_LEVELS
    ]
    assert bounds == sorted(bounds, reverse=True)
    assert LIMIT_LEVELS[-1].entities == LIMIT_LEVELS[-1].facts == 0
    assert [turns_fitting(SCHEMA, cap, 8) for cap in (512, 2048, 4096, None)] == [1, 2, 4, 8]


def test_an_unbounded_schema_has_no_longest_answer() -> None:
    with pytest.raises(UnboundedSchemaError, match="maxItems"):
        max_answer_tokens(batch_schema(SCHEMA, IDS[:1], bounded=False))
    with pytest.raises(UnboundedSchemaError, match="maxLength"):
        max_answer_tokens({"type": "string", "maxLength": 5})  # any character: up to 6 tokens


@pytest.mark.parametrize("cap", [512, 1024, None])
def test_the_summary_schema_is_bounded_and_its_longest_answer_is_a_summary(
    cap: int | None,
) -> None:
    schema = bounded_summary_schema(summary_json_schema(), cap)
    assert_bounded(schema)
    bound = max_answer_tokens(schema)
    assert cap is None or bound <= cap
    answer = longest(schema, {})
    jsonschema.validate(answer, schema)
    SummaryContent.model_validate(answer)  # what the grammar lets through, we can store
    assert len(json.dumps(answer, separators=(", ", ": "))) < bound
    assert grammar_accepts(schema, json.dumps(answer, separators=(",", ":")))
