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
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from turngraph.schemas.ontology import Ontology
from turngraph.schemas.turn_event import TurnEvent

MAX_TURN_CHARS = 6_000
"""Longer turns are cut for the prompt (the head carries most references)."""

MAX_ENTITIES_PER_TURN = 20
"""Entities kept per turn of an answer (more are cut on parse, counted as dropped)."""

MAX_FACTS_PER_TURN = 20
"""Facts kept per turn of an answer."""

MAX_SCHEMA_STRING_CHARS = 300
"""``maxLength`` of names and sentences in the bounded schema (grammar-enforcing servers)."""


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


def batch_schema(
    schema: dict[str, Any], event_ids: Sequence[str], *, bounded: bool
) -> dict[str, Any]:
    """The answer's schema for one batch: ``event_id`` limited to the batch's ids (an
    ``enum``) and, when ``bounded`` (servers that turn the schema into a grammar, and the
    prompt modes), ``maxItems`` and ``maxLength`` so a small model cannot ramble."""
    out = copy.deepcopy(schema)
    defs = out["$defs"]
    defs["turn"]["properties"]["event_id"]["enum"] = list(event_ids)
    if bounded:
        out["properties"]["turns"]["maxItems"] = len(event_ids)
        out["properties"]["turns"]["minItems"] = len(event_ids)
        defs["turn"]["properties"]["entities"]["maxItems"] = MAX_ENTITIES_PER_TURN
        defs["turn"]["properties"]["facts"]["maxItems"] = MAX_FACTS_PER_TURN
        for name in ("entity", "fact"):
            for field_name, prop in defs[name]["properties"].items():
                if prop.get("type") == "string" and "enum" not in prop:
                    prop["maxLength"] = MAX_SCHEMA_STRING_CHARS
                if field_name in ("aliases", "attributes"):
                    prop["maxItems"] = 5
    return out


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
