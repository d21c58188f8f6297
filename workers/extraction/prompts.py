"""The extraction prompt and the pydantic model of its answer, side by side.

The answer's JSON Schema (sent as ``response_format``) is generated from the ontology in
:mod:`schemas.ontology.json_schema`; :class:`ExtractionAnswer` parses the same shape.
Item contents stay loosely typed here so that one bad entity or fact costs only itself:
:mod:`workers.extraction.validation` checks them against the ontology one by one.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from turngraph.schemas.ontology import Ontology
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.output_bounds import bounded_string, max_answer_tokens

__all__ = [
    "ATTRIBUTE_KEY_CHARS", "LIMIT_LEVELS", "MAX_ENTITIES_PER_TURN", "MAX_FACTS_PER_TURN",
    "MAX_TURN_CHARS", "AnswerLimits", "ExtractionAnswer", "TurnAnswer", "batch_schema",
    "build_messages", "fitting_schema", "reask_messages", "system_prompt", "turns_fitting",
    "user_prompt",
]  # fmt: skip

MAX_TURN_CHARS = 6_000
"""Longer turns are cut for the prompt (the head carries most references)."""

MAX_ENTITIES_PER_TURN = 20
"""Entities kept per turn of an answer (more are cut on parse, counted as dropped)."""

MAX_FACTS_PER_TURN = 20
"""Facts kept per turn of an answer."""


class TurnAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore")

    event_id: str
    # Any, not dict: a malformed item is dropped alone by validation, not the whole answer
    entities: list[Any] = Field(default_factory=list)
    facts: list[Any] = Field(default_factory=list)


class ExtractionAnswer(BaseModel):
    """One LLM answer: the results of every turn of the batch, keyed by ``event_id``."""

    model_config = ConfigDict(extra="ignore")

    turns: list[TurnAnswer]


def _ontology_text(ontology: Ontology) -> str:
    lines = ["Entity types:"]
    lines.extend(f"- {t.name}: {t.description}" for t in ontology.entity_types)
    lines.append("")
    lines.append("Relations (source type -> target type):")
    for rel in ontology.relation_types:
        domain = (
            "any"
            if len(rel.domain) == len(ontology.entity_types)
            else "|".join(n for n in ontology.entity_type_names() if n in rel.domain)
        )
        range_ = (
            "any"
            if len(rel.range) == len(ontology.entity_types)
            else "|".join(n for n in ontology.entity_type_names() if n in rel.range)
        )
        lines.append(f"- {rel.name} ({domain} -> {range_}): {rel.description}")
    return "\n".join(lines)


def _short_ontology_text(ontology: Ontology) -> str:
    return "\n".join(
        [
            "Entity types: " + ", ".join(ontology.entity_type_names()) + ".",
            "Relations: " + ", ".join(ontology.relation_names()) + ".",
        ]
    )


def system_prompt(ontology: Ontology, *, short: bool = False) -> str:
    """The instructions, generated from the ontology (types, relations, domains, ranges);
    ``short``: type and relation names only, for models with a small context."""
    return "\n".join(
        [
            "You extract a knowledge graph from developer chat turns (an editor's chat "
            "assistant and its user). Use only the types and relations listed below.",
            "",
            _short_ontology_text(ontology) if short else _ontology_text(ontology),
            "",
            "Rules:",
            "- Answer with one entry per turn, in order, each with the turn's event_id.",
            "- Extract what the turn states or clearly references: files, symbols, branches, "
            "commits, pull requests, issues, plans, tools, services, decisions, problems, "
            "solutions, preferences, procedures, lessons, terminology. No guesses.",
            "- Names as written: paths as paths, commits as hex, issues and PRs as #N or "
            "owner/repo#N, plan ids as written (PLAN-12, Phase 3).",
            "- A Decision gets an attribute subject: a short normalised noun phrase for what "
            "it decides about, so a later decision on the same subject can supersede it.",
            "- A memory directive (decision:, preference:, terminology:, lesson:, procedure:) "
            "gets an attribute scope: workspace or user (workspace unless it says user).",
            "- Every fact's source and target must be entities listed in the same turn, and "
            "the relation must accept their types (source in domain, target in range).",
            "- Never copy secrets, tokens or passwords into names or statements.",
            f"- At most {MAX_ENTITIES_PER_TURN} entities and {MAX_FACTS_PER_TURN} facts "
            "per turn: the most important ones.",
        ]
    )


def user_prompt(turns: Sequence[TurnEvent]) -> str:
    """The batch of turns, as JSON (content cut to :data:`MAX_TURN_CHARS`)."""
    payload: list[dict[str, object]] = []
    for t in turns:
        item: dict[str, object] = {
            "event_id": t.event_id,
            "role": t.role.value,
            "speaker": t.speaker,
            "content": t.content[:MAX_TURN_CHARS],
        }
        if t.references:
            item["references"] = [{"kind": r.kind, "value": r.value} for r in t.references]
        payload.append(item)
    return "Extract entities and facts from these turns:\n" + json.dumps(
        payload, ensure_ascii=False
    )


@dataclass(frozen=True)
class AnswerLimits:
    """Items and characters one turn's answer may hold in the bounded schema."""

    entities: int
    facts: int
    aliases: int = 1
    attributes: int = 1
    name_chars: int = 64
    text_chars: int = 96
    """Summaries, statements and attribute values."""


LIMIT_LEVELS = (
    AnswerLimits(MAX_ENTITIES_PER_TURN, MAX_FACTS_PER_TURN, aliases=3, attributes=3),
    AnswerLimits(8, 6),
    AnswerLimits(4, 3),
    AnswerLimits(2, 1, aliases=0, name_chars=48, text_chars=32),
    AnswerLimits(1, 0, aliases=0, name_chars=48, text_chars=32),
    AnswerLimits(0, 0),
)
"""Richest first: a call gets the richest whose longest answer fits its output cap."""

ATTRIBUTE_KEY_CHARS = 16


def batch_schema(
    schema: dict[str, Any],
    event_ids: Sequence[str],
    *,
    bounded: bool,
    limits: AnswerLimits = LIMIT_LEVELS[0],
) -> dict[str, Any]:
    """The answer's schema for one batch: ``event_id`` limited to the batch's ids (an
    ``enum``) and, when ``bounded`` (servers that turn the schema into a grammar, and the
    prompt modes), every array and string limited by ``limits`` so that the answer has a
    longest form (:func:`workers.output_bounds.max_answer_tokens`)."""
    out = copy.deepcopy(schema)
    defs = out["$defs"]
    defs["turn"]["properties"]["event_id"]["enum"] = list(event_ids)
    if not bounded:
        return out
    out["properties"]["turns"]["maxItems"] = len(event_ids)
    out["properties"]["turns"]["minItems"] = len(event_ids)
    defs["turn"]["properties"]["entities"]["maxItems"] = limits.entities
    defs["turn"]["properties"]["facts"]["maxItems"] = limits.facts
    entity = defs["entity"]["properties"]
    entity["name"] = _described(entity["name"], bounded_string(limits.name_chars, min_length=1))
    entity["aliases"]["items"] = bounded_string(limits.name_chars)
    entity["aliases"]["maxItems"] = limits.aliases
    entity["summary"] = _described(entity["summary"], bounded_string(limits.text_chars))
    entity["attributes"]["maxItems"] = limits.attributes
    pair = entity["attributes"]["items"]["properties"]
    pair["key"] = bounded_string(ATTRIBUTE_KEY_CHARS, min_length=1)
    pair["value"] = bounded_string(limits.text_chars)
    fact = defs["fact"]["properties"]
    fact["statement"] = _described(fact["statement"], bounded_string(limits.text_chars))
    for end in ("source", "target"):
        ref = fact[end]["properties"]
        ref["name"] = _described(ref["name"], bounded_string(limits.name_chars, min_length=1))
    return out


def _described(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    return {**new, "description": old["description"]} if "description" in old else new


def fitting_schema(
    schema: dict[str, Any], event_ids: Sequence[str], max_output_tokens: int | None
) -> tuple[dict[str, Any], int] | None:
    """The richest bounded schema for the batch whose longest answer fits
    ``max_output_tokens`` (any, without a cap), with that answer's token bound; None
    when not even empty answers for the batch fit."""
    for limits in LIMIT_LEVELS:
        bounded = batch_schema(schema, event_ids, bounded=True, limits=limits)
        bound = max_answer_tokens(bounded)
        if max_output_tokens is None or bound <= max_output_tokens:
            return bounded, bound
    return None


def turns_fitting(schema: dict[str, Any], max_output_tokens: int | None, most: int) -> int:
    """How many turns one call may carry (at most ``most``, at least 1) so that each
    turn can still get two entities and a fact (:data:`LIMIT_LEVELS`) within the cap."""
    if max_output_tokens is None:
        return most
    smallest = LIMIT_LEVELS[3]
    for turns in range(most, 1, -1):
        ids = [f"t_{i:032x}" for i in range(turns)]  # as long as the producers' ids
        bounded = batch_schema(schema, ids, bounded=True, limits=smallest)
        if max_answer_tokens(bounded) <= max_output_tokens:
            return turns
    return 1


def build_messages(
    ontology: Ontology, turns: Sequence[TurnEvent], *, short: bool = False
) -> list[dict[str, str]]:
    """The chat messages of one extraction call (the endpoint adds the schema to the
    prompt when the server does not enforce it)."""
    return [
        {"role": "system", "content": system_prompt(ontology, short=short)},
        {"role": "user", "content": user_prompt(turns)},
    ]


def reask_messages(
    messages: Sequence[dict[str, str]], answer_text: str, problems: Sequence[str]
) -> list[dict[str, str]]:
    """A copy of ``messages`` with the invalid answer and what was wrong with it."""
    listed = "\n".join(f"- {p}" for p in problems[:30])
    return [
        *(dict(m) for m in messages),
        {"role": "assistant", "content": answer_text[:20_000]},
        {
            "role": "user",
            "content": "Your answer did not validate:\n"
            + listed
            + f"\nLimits: one entry per turn, event_id as given; at most {MAX_ENTITIES_PER_TURN} "
            f"entities and {MAX_FACTS_PER_TURN} facts per turn."
            + "\nAnswer again with the whole corrected result for every turn.",
        },
    ]
