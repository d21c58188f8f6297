"""The ontology in code and what is generated from it: schema, prompt, validation."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from turngraph.schemas.ontology import (
    ENTITY_KEY_PROPERTIES,
    ONTOLOGY,
    ONTOLOGY_VERSION,
    EntityType,
    Ontology,
    RelationType,
    extraction_json_schema,
    labels,
    relationship_types,
    response_format,
    uniqueness_keys,
)
from turngraph.schemas.ontology.model import RELATION_NAME_PATTERN, TYPE_NAME_PATTERN
from turngraph.workers.extraction.prompts import ExtractionAnswer, system_prompt
from turngraph.workers.extraction.validation import validate_raw

SEED_TYPES = {
    "Repository", "Branch", "Commit", "PullRequest", "Issue", "File", "Symbol", "Decision",
    "Task", "Incident", "Tool", "Service", "Topic", "Concept", "Problem", "Solution",
    "Question", "Person", "Preference", "Procedure", "LessonLearned", "Terminology", "Plan",
    "Url",
}  # fmt: skip
SEED_RELATIONS = {
    "APPLIES_TO", "OWNS", "HAPPENED_ON", "MODIFIES", "IMPLEMENTS", "BLOCKS", "DEPENDS_ON",
    "USES_TOOL", "PREFERS", "ALIAS_OF", "TERMINOLOGY_FOR", "FOLLOWS", "AUTHORED", "MENTIONS",
    "HAS_TOPIC", "SOLVES", "PROPOSES", "IMPACTS", "SUPERSEDES", "RELATED_TO",
}  # fmt: skip
STRICT_UNSUPPORTED = {"minLength", "maxLength", "pattern", "format", "minimum", "maximum",
                      "minItems", "maxItems", "default"}  # fmt: skip


def test_declares_the_seed_types_and_relations_with_descriptions() -> None:
    assert ONTOLOGY.version == ONTOLOGY_VERSION >= 1
    assert set(labels()) >= SEED_TYPES
    assert set(relationship_types()) >= SEED_RELATIONS
    assert all(t.description for t in ONTOLOGY.entity_types)
    assert all(r.description and r.domain and r.range for r in ONTOLOGY.relation_types)


def test_labels_and_relationship_types_are_valid_neo4j_names() -> None:
    assert all(TYPE_NAME_PATTERN.match(label) for label in labels())
    assert all(RELATION_NAME_PATTERN.match(rel) for rel in relationship_types())
    assert uniqueness_keys() == {label: ENTITY_KEY_PROPERTIES for label in labels()}


def test_lookup_by_alias_is_case_insensitive() -> None:
    assert ONTOLOGY.entity_type("pr").name == "PullRequest"  # type: ignore[union-attr]
    assert ONTOLOGY.entity_type("user").name == "Person"  # type: ignore[union-attr]
    assert ONTOLOGY.relation_type("fixes").name == "SOLVES"  # type: ignore[union-attr]
    assert ONTOLOGY.entity_type("Spaceship") is None


def test_normalize_name_keeps_case_where_case_matters() -> None:
    assert ONTOLOGY.normalize_name("File", "./src/App.py ") == "src/App.py"
    assert ONTOLOGY.normalize_name("Branch", "Feature/X") == "Feature/X"
    assert ONTOLOGY.normalize_name("Tool", "  PyTest ") == "pytest"
    assert ONTOLOGY.normalize_name("Decision", "Use  Redis.") == "use redis"
    assert ONTOLOGY.normalize_name("Commit", "3F9C2AB1d2e3f4a5") == "3f9c2ab1d2e3"
    fullwidth = "".join(chr(0xFF00 + ord(c) - 0x20) for c in "pytest")  # NFKC folds it
    assert ONTOLOGY.normalize_name("Tool", f"`{fullwidth}`") == "pytest"
    assert ONTOLOGY.normalize_name("Url", "https://x.io/A") == "https://x.io/A"


def test_an_inconsistent_ontology_is_refused() -> None:
    thing = EntityType("Thing", "a thing")
    with pytest.raises(ValueError, match="unknown types"):
        Ontology(1, (thing,), (RelationType("R", "r", frozenset({"Thing"}), frozenset({"X"})),))
    with pytest.raises(ValueError, match="PascalCase"):
        EntityType("not_pascal", "x")


def _walk(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


def test_schema_is_strict_mode_compatible() -> None:
    fmt = response_format(ONTOLOGY)
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["strict"] is True
    for node in _walk(fmt["json_schema"]["schema"]):
        assert not (STRICT_UNSUPPORTED & set(node)), node
        if node.get("type") == "object":
            assert node["additionalProperties"] is False
            assert sorted(node["required"]) == sorted(node["properties"])
    json.dumps(fmt)  # serialisable as is


def test_schema_enums_come_from_the_ontology() -> None:
    defs = extraction_json_schema(ONTOLOGY)["$defs"]
    assert defs["entity"]["properties"]["type"]["enum"] == list(labels())
    assert defs["fact"]["properties"]["relation"]["enum"] == list(relationship_types())


def test_prompt_lists_every_type_and_relation_with_domain_and_range() -> None:
    prompt = system_prompt(ONTOLOGY)
    assert all(f"- {label}:" in prompt for label in labels())
    assert "- MODIFIES (Branch|Commit|PullRequest|Task -> File|Symbol)" in prompt


def _entity(type_name: str, name: str, **attrs: str) -> dict[str, Any]:
    return {
        "type": type_name,
        "name": name,
        "aliases": [],
        "summary": "",
        "attributes": [{"key": k, "value": v} for k, v in attrs.items()],
    }


def _fact(relation: str, src: tuple[str, str], dst: tuple[str, str]) -> dict[str, Any]:
    return {
        "relation": relation,
        "source": {"type": src[0], "name": src[1]},
        "target": {"type": dst[0], "name": dst[1]},
        "statement": "",
    }


def test_a_schema_shaped_answer_parses_and_validates() -> None:
    answer = ExtractionAnswer.model_validate(
        {
            "turns": [
                {
                    "event_id": "e1",
                    "entities": [
                        _entity("Commit", "3f9c2ab"),
                        _entity("File", "a.py"),
                        _entity("Decision", "use Redis", subject="queue"),
                    ],
                    "facts": [_fact("MODIFIES", ("Commit", "3f9c2ab"), ("File", "a.py"))],
                }
            ]
        }
    )
    turn = answer.turns[0]
    result = validate_raw(turn.event_id, turn.entities, turn.facts)
    assert result.ok and result.problems == []
    extraction = result.extraction
    assert [(e.type, e.name) for e in extraction.entities] == [
        ("Commit", "3f9c2ab"),
        ("File", "a.py"),
        ("Decision", "use Redis"),
    ]
    assert extraction.entities[2].attributes == {"subject": "queue"}
    assert [(f.relation, f.source.name, f.target.name) for f in extraction.facts] == [
        ("MODIFIES", "3f9c2ab", "a.py")
    ]


def test_validation_repairs_aliases_reversed_facts_and_missing_endpoints() -> None:
    result = validate_raw(
        "e1",
        [_entity("PR", "#45"), _entity("file", "a.py")],
        [
            _fact("CHANGES", ("File", "a.py"), ("PullRequest", "#45")),  # alias + reversed
            _fact("FIXES", ("PullRequest", "#45"), ("Issue", "#12")),  # endpoint not listed
        ],
    )
    extraction = result.extraction
    assert extraction.dropped == 0
    assert extraction.repaired == 5  # 2 type aliases, 1 reversed, 1 alias relation, 1 endpoint
    assert [(f.relation, f.source.type, f.target.type) for f in extraction.facts] == [
        ("MODIFIES", "PullRequest", "File"),
        ("SOLVES", "PullRequest", "Issue"),
    ]
    assert ("Issue", "#12") in [(e.type, e.name) for e in extraction.entities]


def test_validation_drops_what_cannot_fit_and_says_why_without_names() -> None:
    result = validate_raw(
        "e1",
        [_entity("Spaceship", "secret-name-1"), _entity("Person", "alice"), {"type": "File"}],
        [
            _fact("MODIFIES", ("Person", "alice"), ("Tool", "secret-name-2")),
            _fact("TELEPORTS", ("Person", "alice"), ("Person", "bob")),
            _fact("RELATED_TO", ("Person", "alice"), ("Person", "alice")),
        ],
    )
    assert result.extraction.dropped == 5  # 2 entities, 3 facts
    assert not result.ok
    assert [(e.type, e.name) for e in result.extraction.entities] == [("Person", "alice")]
    assert result.extraction.facts == []
    joined = "\n".join(result.problems)
    assert "MODIFIES does not accept Person -> Tool" in joined
    assert "secret-name" not in joined and "alice" not in joined


def test_duplicate_entities_merge_and_symmetric_facts_are_stored_once() -> None:
    result = validate_raw(
        "e1",
        [_entity("Tool", "pytest", a="1"), _entity("tool", "PyTest", b="2")],
        [
            _fact("RELATED_TO", ("Tool", "pytest"), ("Service", "Redis")),
            _fact("RELATED_TO", ("Service", "Redis"), ("Tool", "pytest")),
        ],
    )
    extraction = result.extraction
    assert [(e.name, e.attributes) for e in extraction.entities if e.type == "Tool"] == [
        ("pytest", {"a": "1", "b": "2"})
    ]
    assert len(extraction.facts) == 1


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
_names = st.sampled_from([*labels(), "pr", "Spaceship", ""]) | st.text(max_size=10)
_rels = st.sampled_from([*relationship_types(), "fixes", "TELEPORTS"]) | st.text(max_size=10)
_ref = st.fixed_dictionaries({"type": _names, "name": st.text(max_size=12)})


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        _json | st.fixed_dictionaries({"type": _names, "name": st.text(max_size=12)}), max_size=6
    ),
    st.lists(
        _json | st.fixed_dictionaries({"relation": _rels, "source": _ref, "target": _ref}),
        max_size=6,
    ),
)
def test_any_untrusted_answer_validates_into_a_well_formed_extraction(
    entities: list[Any], facts: list[Any]
) -> None:
    result = validate_raw("e1", entities, facts)
    extraction = result.extraction
    assert extraction.dropped == len(result.problems)
    assert extraction.dropped <= len(entities) + len(facts)
    keys = {(e.type, ONTOLOGY.normalize_name(e.type, e.name)) for e in extraction.entities}
    assert len(keys) == len(extraction.entities)  # no duplicates
    for f in extraction.facts:
        relation = ONTOLOGY.relation_type(f.relation)
        assert relation is not None and relation.accepts(f.source.type, f.target.type)
        for ref in (f.source, f.target):
            assert (ref.type, ONTOLOGY.normalize_name(ref.type, ref.name)) in keys
