"""Reading an LLM answer: the JSON inside it, checked against the batch and the ontology.

Servers that ignore ``response_format`` (Ollama before 0.5, some proxies) answer in a
```` ```json ```` fence or with a sentence around the object; :func:`json_text` finds the
object anyway. Problems are described by position and type names only, never by the
answer's content, so they can go into logs and into the re-ask.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pydantic

from turngraph.schemas.ontology import Ontology
from turngraph.schemas.turn_event import TurnEvent
from turngraph.schemas.validation import invalid_fields
from turngraph.workers.extraction.models import Extraction
from turngraph.workers.extraction.prompts import (
    MAX_ENTITIES_PER_TURN,
    MAX_FACTS_PER_TURN,
    ExtractionAnswer,
)
from turngraph.workers.extraction.validation import validate_raw

__all__ = ["NESTED_TOO_DEEP", "ParsedAnswer", "json_text", "parse_answer"]

_FENCE = re.compile(r"```[\w-]*[ \t]*\n?(.*?)```", re.S)
_DECODER = json.JSONDecoder()


@dataclass
class ParsedAnswer:
    """One answer checked against the batch: per-turn results and what was wrong."""

    extractions: dict[str, Extraction] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    usable: bool = True
    """False when nothing could be read (broken JSON, wrong shape, refusal)."""


NESTED_TOO_DEEP = "the answer nests arrays or objects deeper than JSON parsing allows"
"""The problem named for an answer the parser gives up on (RecursionError)."""


def json_text(text: str) -> str:
    """The JSON object in ``text``: the answer itself, the inside of its first code fence,
    or the first decodable ``{…}`` after some prose. Unchanged when none is found (the
    JSON error then names the problem)."""
    stripped = text.strip()
    if stripped.startswith("{") and stripped.endswith("}"):
        return stripped
    fence = _FENCE.search(stripped)
    if fence and fence.group(1).strip().startswith("{"):
        return fence.group(1).strip()
    start = stripped.find("{")
    while start != -1:
        try:
            _, end = _DECODER.raw_decode(stripped, start)
        except json.JSONDecodeError:
            start = stripped.find("{", start + 1)
            continue
        return stripped[start:end]
    return stripped


def parse_answer(text: str, batch: Sequence[TurnEvent], ontology: Ontology) -> ParsedAnswer:
    """The answer's per-turn extractions, validated against the ontology."""
    if not text.strip():
        return ParsedAnswer(problems=["the answer was empty (or a refusal)"], usable=False)
    try:
        data: Any = json.loads(json_text(text))
    except json.JSONDecodeError as err:
        return ParsedAnswer(
            problems=[f"the answer is not valid JSON: {err.msg} at char {err.pos}"], usable=False
        )
    except RecursionError:  # a small model looping on "[": it ended the ingest job
        return ParsedAnswer(problems=[NESTED_TOO_DEEP], usable=False)
    try:
        answer = ExtractionAnswer.model_validate(data)
    except pydantic.ValidationError as err:
        where = invalid_fields(err, "answer")
        return ParsedAnswer(
            problems=[f"the answer does not match the schema at: {', '.join(where[:10])}"],
            usable=False,
        )
    parsed = ParsedAnswer()
    wanted = {turn.event_id for turn in batch}
    for turn_answer in answer.turns:
        if turn_answer.event_id not in wanted:
            parsed.problems.append(f"event_id {turn_answer.event_id[:64]!r} is not in the batch")
            continue
        if turn_answer.event_id in parsed.extractions:
            parsed.problems.append(f"event_id {turn_answer.event_id!r} answered twice")
            continue
        entities, facts = turn_answer.entities, turn_answer.facts
        # extra items are cut, not re-asked for (counted as dropped)
        cut = max(0, len(entities) - MAX_ENTITIES_PER_TURN) + max(
            0, len(facts) - MAX_FACTS_PER_TURN
        )
        result = validate_raw(
            turn_answer.event_id,
            entities[:MAX_ENTITIES_PER_TURN],
            facts[:MAX_FACTS_PER_TURN],
            ontology,
        )
        extraction = result.extraction
        if cut:
            extraction = extraction.model_copy(update={"dropped": extraction.dropped + cut})
        parsed.extractions[turn_answer.event_id] = extraction
        parsed.problems.extend(f"turn {turn_answer.event_id}: {p}" for p in result.problems)
    missing = [turn.event_id for turn in batch if turn.event_id not in parsed.extractions]
    if missing:
        parsed.problems.append(f"no result for event_id(s) {missing}")
    return parsed
