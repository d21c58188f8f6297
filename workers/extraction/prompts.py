"""The extraction prompt and the pydantic model of its answer, side by side.

The answer's JSON Schema (sent as ``response_format``) is generated from the ontology in
:mod:`schemas.ontology.json_schema`; :class:`ExtractionAnswer` parses the same shape.
Item contents stay loosely typed here so that one bad entity or fact costs only itself:
:mod:`workers.extraction.validation` checks them against the ontology one by one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from turngraph.schemas.ontology import Ontology
from turngraph.schemas.turn_event import TurnEvent

MAX_TURN_CHARS = 6_000
"""Longer turns are cut for the prompt (the head carries most references)."""


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


def system_prompt(ontology: Ontology) -> str:
    """The instructions, generated from the ontology (types, relations, domains, ranges)."""
    return "\n".join(
        [
            "You extract a knowledge graph from developer chat turns (an editor's chat "
            "assistant and its user). Use only the types and relations listed below.",
            "",
            _ontology_text(ontology),
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


def schema_prompt(schema: dict[str, Any]) -> str:
    """The answer's JSON Schema as instructions, for servers that cannot enforce it."""
    return (
        "Answer with one JSON object and nothing else (no code fence, no prose). "
        "It must match this JSON Schema:\n" + json.dumps(schema, separators=(",", ":"))
    )


def build_messages(
    ontology: Ontology, turns: Sequence[TurnEvent], schema: dict[str, Any] | None = None
) -> list[dict[str, str]]:
    """The chat messages of one extraction call; ``schema`` goes into the system prompt
    when the server does not take it as ``response_format``."""
    system = system_prompt(ontology)
    if schema is not None:
        system += "\n\n" + schema_prompt(schema)
    return [
        {"role": "system", "content": system},
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
            + "\nAnswer again with the whole corrected result for every turn.",
        },
    ]
