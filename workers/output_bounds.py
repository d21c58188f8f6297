"""The most tokens an answer can take when the server turns its JSON Schema into a grammar.

A schema whose every array has ``maxItems``, every string a ``maxLength`` (printable
ASCII without quote or backslash, :func:`bounded_string`: one token at most a character)
and every other value a finite ``enum`` has a longest answer; :func:`max_answer_tokens`
computes it, so ``max_tokens`` can be set for the answer to finish. Which servers, and
the whitespace they allow: docs/llm.md ("Answers that finish").
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "END_TOKENS", "SAFE_CHARACTER", "SPACE_CHARS", "UnboundedSchemaError", "bounded_string",
    "max_answer_chars", "max_answer_tokens",
]  # fmt: skip

SAFE_CHARACTER = r"[ !#-\[\]-~]"
"""Printable ASCII except ``"`` and ``\\``: one byte each, never escaped in JSON."""

SPACE_CHARS = 1
"""Most whitespace the grammar allows after a value or separator (llama-cpp-python's
``space ::= " "?``; llama.cpp's server: ``| " " | "\\n"{1,2} [ \\t]{0,20}``, 22)."""

END_TOKENS = 2
"""Room for an end-of-generation token the server may count."""


class UnboundedSchemaError(ValueError):
    """The schema allows answers of any length (an array without ``maxItems``, a string
    without ``maxLength`` or with characters of more than one byte)."""


def bounded_string(max_length: int, *, min_length: int = 0) -> dict[str, Any]:
    """A string of ``min_length`` to ``max_length`` one-byte characters."""
    return {
        "type": "string",
        "pattern": f"^{SAFE_CHARACTER}{{{min_length},{max_length}}}$",
        "minLength": min_length,
        "maxLength": max_length,
    }


def max_answer_chars(schema: dict[str, Any]) -> int:
    """The longest answer (characters) the schema's grammar allows."""
    return _chars(schema, schema.get("$defs", {}), depth=0)


def max_answer_tokens(schema: dict[str, Any]) -> int:
    """At most this many tokens: one per character (each one byte) and the end token."""
    return max_answer_chars(schema) + END_TOKENS


def _chars(schema: dict[str, Any], defs: dict[str, Any], depth: int) -> int:
    if depth > 32:
        raise UnboundedSchemaError("the schema refers to itself")
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return _chars(defs[ref.rsplit("/", 1)[-1]], defs, depth + 1)
    if "enum" in schema:
        return max(len(json.dumps(value)) for value in schema["enum"]) + SPACE_CHARS
    kind = schema.get("type")
    if kind == "object":
        properties: dict[str, Any] = schema.get("properties", {})
        if schema.get("additionalProperties", True) is not False:
            raise UnboundedSchemaError("an object allows additional properties")
        inner = sum(
            len(json.dumps(name)) + 1 + 2 * SPACE_CHARS + _chars(value, defs, depth + 1)
            for name, value in properties.items()
        )
        separators = max(0, len(properties) - 1) * (1 + SPACE_CHARS)
        return 2 + 2 * SPACE_CHARS + inner + separators
    if kind == "array":
        if "maxItems" not in schema:
            raise UnboundedSchemaError("an array has no maxItems")
        items = int(schema["maxItems"])
        each = _chars(schema["items"], defs, depth + 1) if items else 0
        return 2 + 2 * SPACE_CHARS + items * each + max(0, items - 1) * (1 + SPACE_CHARS)
    if kind == "string":
        if "maxLength" not in schema or not str(schema.get("pattern", "")).startswith(
            f"^{SAFE_CHARACTER}{{"
        ):
            raise UnboundedSchemaError("a string has no maxLength of one-byte characters")
        return 2 + int(schema["maxLength"]) + SPACE_CHARS
    raise UnboundedSchemaError(f"no bound for a value of type {kind!r}")
