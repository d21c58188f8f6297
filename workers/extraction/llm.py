"""The LLM extractor: structured output from the ontology's JSON Schema, micro-batched.

Consecutive turns of one session go into one call (one answer, per-turn results keyed
by ``event_id``), so calls per turn stay at or below one. An answer that does not
validate (broken JSON, wrong shape, a domain/range violation, a missing turn) is sent
back once with the problems, on a copy of the messages; what still does not validate is
dropped and counted. Rate limits and server errors are retried by the openai client
itself (``max_retries``, honouring ``Retry-After``); when it gives up we raise
:class:`~workers.extraction.errors.LLMUnavailableError` and the RQ job retries.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import openai
import pydantic
import structlog

from schemas.ontology import ONTOLOGY, Ontology, response_format
from schemas.turn_event import TurnEvent
from schemas.validation import invalid_fields
from workers.extraction.errors import (
    LLMConfigurationError,
    LLMRequestError,
    LLMUnavailableError,
)
from workers.extraction.models import Extraction
from workers.extraction.prompts import (
    MAX_TURN_CHARS,
    ExtractionAnswer,
    build_messages,
    reask_messages,
)
from workers.extraction.references import attached
from workers.extraction.stats import ExtractionStats
from workers.extraction.validation import validate_raw, with_entities

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

log = structlog.get_logger(__name__)

DEFAULT_BATCH_MAX_TURNS = 8
"""Most turns in one call; consecutive turns of one session only."""

DEFAULT_BATCH_MAX_CHARS = 16_000
"""Most turn characters in one call (the prompt stays well inside small context windows)."""

TRANSIENT_STATUS = frozenset({408, 409, 429})
"""Besides 5xx: statuses worth another try later (the client already retried them)."""


@dataclass
class _Parsed:
    """One answer checked against the batch: per-turn results and what was wrong."""

    extractions: dict[str, Extraction] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    usable: bool = True
    """False when nothing could be read (broken JSON, wrong shape, refusal)."""


def micro_batches(
    turns: Sequence[TurnEvent],
    max_turns: int = DEFAULT_BATCH_MAX_TURNS,
    max_chars: int = DEFAULT_BATCH_MAX_CHARS,
) -> list[list[TurnEvent]]:
    """Consecutive turns of the same session, bounded in count and characters."""
    batches: list[list[TurnEvent]] = []
    size = 0
    for turn in turns:
        chars = min(len(turn.content), MAX_TURN_CHARS)
        current = batches[-1] if batches else None
        if (
            current is None
            or current[-1].session_id != turn.session_id
            or len(current) >= max_turns
            or size + chars > max_chars
        ):
            batches.append([turn])
            size = chars
        else:
            current.append(turn)
            size += chars
    return batches


def _convert(err: openai.OpenAIError) -> Exception:
    """An openai error as one of ours: transient (retry the job) or permanent."""
    if isinstance(err, openai.APITimeoutError):
        return LLMUnavailableError("LLM request timed out")
    if isinstance(err, openai.APIConnectionError):
        return LLMUnavailableError("LLM endpoint unreachable")
    if isinstance(err, openai.APIStatusError):
        status = err.status_code
        if status >= 500 or status in TRANSIENT_STATUS:
            return LLMUnavailableError(f"LLM endpoint answered {status} after retries")
        if status in (401, 403, 404):
            return LLMConfigurationError(
                f"LLM endpoint answered {status}: check the API key, base URL and model"
            )
        return LLMRequestError(f"LLM endpoint rejected the request ({status})")
    return LLMRequestError(f"LLM call failed ({type(err).__name__})")


class LLMExtractor:
    """:class:`~workers.extraction.models.Extractor` through the official openai client.

    ``client`` is built once per process from settings (``turngraph.clients``) with its
    ``timeout`` and ``max_retries``; this class adds no retry loop of its own.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        ontology: Ontology = ONTOLOGY,
        stats: ExtractionStats | None = None,
        batch_max_turns: int = DEFAULT_BATCH_MAX_TURNS,
        batch_max_chars: int = DEFAULT_BATCH_MAX_CHARS,
        concurrency: int = 1,
    ) -> None:
        self.client = client
        self.model = model
        self.ontology = ontology
        self.stats = stats if stats is not None else ExtractionStats()
        self.batch_max_turns = batch_max_turns
        self.batch_max_chars = batch_max_chars
        self.concurrency = max(1, concurrency)
        self._response_format = response_format(ontology)

    def extract(self, turns: Sequence[TurnEvent]) -> list[Extraction]:
        batches = micro_batches(turns, self.batch_max_turns, self.batch_max_chars)
        if self.concurrency > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                results = list(pool.map(self._extract_batch, batches))
        else:
            results = [self._extract_batch(batch) for batch in batches]
        by_id = {event_id: x for result in results for event_id, x in result.items()}
        return [by_id[turn.event_id] for turn in turns]

    # -- one batch --------------------------------------------------------------------

    def _extract_batch(self, batch: list[TurnEvent]) -> dict[str, Extraction]:
        messages = build_messages(self.ontology, batch)
        text, truncated = self._call(messages)
        if truncated and len(batch) > 1:
            # The answer hit the output limit: two smaller calls beat a re-ask.
            half = len(batch) // 2
            return {**self._extract_batch(batch[:half]), **self._extract_batch(batch[half:])}
        parsed = self._parse(text, batch)
        if parsed.problems:
            self.stats.add(reasks=1, invalid_answers=1)
            log.info("extraction_reask", turns=len(batch), problems=len(parsed.problems))
            retry_text, _ = self._call(reask_messages(messages, text, parsed.problems))
            second = self._parse(retry_text, batch)
            if second.problems:
                self.stats.add(invalid_answers=1)
            if second.usable or not parsed.usable:
                parsed = second
        results = {}
        for turn in batch:
            extraction = parsed.extractions.get(turn.event_id)
            if extraction is None:  # lost: counted as one drop, the episode is still stored
                self.stats.add(unanswered_turns=1)
                extraction = Extraction(event_id=turn.event_id, dropped=1)
            if turn.references:  # what the producer attached is known without asking
                pairs = (attached(r.kind, r.value) for r in turn.references)
                extraction = with_entities(extraction, [p for p in pairs if p], self.ontology)
            results[turn.event_id] = extraction
        self.stats.add(
            turns=len(batch),
            batches=1,
            dropped=sum(x.dropped for x in results.values()),
            repaired=sum(x.repaired for x in results.values()),
        )
        return results

    def _call(self, messages: list[dict[str, str]]) -> tuple[str, bool]:
        """The answer's text and whether it was cut at the output limit."""
        try:
            # plain dicts for messages and response_format: the typed params are TypedDicts
            completion: ChatCompletion = self.client.chat.completions.create(  # type: ignore[call-overload]
                model=self.model,
                messages=messages,
                response_format=self._response_format,
                # no temperature: reasoning models reject any value but the default
            )
        except openai.OpenAIError as err:
            converted = _convert(err)
            if isinstance(converted, LLMUnavailableError):
                self.stats.add(transient_failures=1)
            log.warning(
                "extraction_call_failed", error=type(err).__name__, kind=type(converted).__name__
            )
            raise converted from err
        usage = completion.usage
        self.stats.add(
            calls=1,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )
        if not completion.choices:
            return "", False
        choice = completion.choices[0]
        return choice.message.content or "", choice.finish_reason == "length"

    def _parse(self, text: str, batch: Sequence[TurnEvent]) -> _Parsed:
        if not text.strip():
            return _Parsed(problems=["the answer was empty (or a refusal)"], usable=False)
        try:
            data: Any = json.loads(text)
        except json.JSONDecodeError as err:
            return _Parsed(
                problems=[f"the answer is not valid JSON: {err.msg} at char {err.pos}"],
                usable=False,
            )
        try:
            answer = ExtractionAnswer.model_validate(data)
        except pydantic.ValidationError as err:
            where = invalid_fields(err, "answer")
            return _Parsed(
                problems=[f"the answer does not match the schema at: {', '.join(where[:10])}"],
                usable=False,
            )
        parsed = _Parsed()
        wanted = {turn.event_id for turn in batch}
        for turn_answer in answer.turns:
            if turn_answer.event_id not in wanted:
                parsed.problems.append(
                    f"event_id {turn_answer.event_id[:64]!r} is not in the batch"
                )
                continue
            if turn_answer.event_id in parsed.extractions:
                parsed.problems.append(f"event_id {turn_answer.event_id!r} answered twice")
                continue
            result = validate_raw(
                turn_answer.event_id, turn_answer.entities, turn_answer.facts, self.ontology
            )
            parsed.extractions[turn_answer.event_id] = result.extraction
            parsed.problems.extend(f"turn {turn_answer.event_id}: {p}" for p in result.problems)
        missing = [turn.event_id for turn in batch if turn.event_id not in parsed.extractions]
        if missing:
            parsed.problems.append(f"no result for event_id(s) {missing}")
        return parsed
