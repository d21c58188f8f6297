"""The extraction JSON Schema, generated from the ontology.

Compatible with OpenAI structured output in strict mode: every object lists all its
properties as required and forbids additional ones, free-form maps are arrays of
key/value pairs, and no unsupported keywords (lengths, patterns, formats) are used.
"""

from __future__ import annotations

from typing import Any

from turngraph.schemas.ontology.model import Ontology

__all__ = ["SCHEMA_NAME", "extraction_json_schema", "response_format"]

SCHEMA_NAME = "turngraph_extraction"
"""The ``json_schema.name`` sent to the LLM endpoint."""


def _object(properties: dict[str, Any], description: str = "") -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    if description:
        schema["description"] = description
    return schema


def extraction_json_schema(ontology: Ontology) -> dict[str, Any]:
    """The schema of one LLM answer: per-turn results keyed by ``event_id``."""
    entity_type = {
        "type": "string",
        "enum": list(ontology.entity_type_names()),
        "description": "An entity type of the ontology.",
    }
    ref = _object(
        {"type": entity_type, "name": {"type": "string", "description": "The entity's name."}},
        "Names an entity listed in the same turn's entities.",
    )
    entity = _object(
        {
            "type": entity_type,
            "name": {"type": "string", "description": "Canonical name, as written."},
            "aliases": {"type": "array", "items": {"type": "string"}},
            "summary": {"type": "string", "description": "One short sentence, or empty."},
            "attributes": {
                "type": "array",
                "items": _object({"key": {"type": "string"}, "value": {"type": "string"}}),
                "description": "e.g. subject of a Decision, scope of a directive.",
            },
        }
    )
    fact = _object(
        {
            "relation": {
                "type": "string",
                "enum": list(ontology.relation_names()),
                "description": "A relation of the ontology; respect its domain and range.",
            },
            "source": ref,
            "target": ref,
            "statement": {"type": "string", "description": "The fact in one sentence."},
        }
    )
    turn = _object(
        {
            "event_id": {"type": "string", "description": "The event_id of the turn."},
            "entities": {"type": "array", "items": {"$ref": "#/$defs/entity"}},
            "facts": {"type": "array", "items": {"$ref": "#/$defs/fact"}},
        }
    )
    schema = _object({"turns": {"type": "array", "items": {"$ref": "#/$defs/turn"}}})
    schema["$defs"] = {"entity": entity, "fact": fact, "turn": turn}
    return schema


def response_format(ontology: Ontology) -> dict[str, Any]:
    """The ``response_format`` argument of ``chat.completions.create``."""
    return {
        "type": "json_schema",
        "json_schema": {
            "name": SCHEMA_NAME,
            "strict": True,
            "schema": extraction_json_schema(ontology),
        },
    }
