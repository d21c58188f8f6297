"""The LLM extractor: structured output from the ontology's JSON Schema, micro-batched.

Consecutive turns of one session share a call (per-turn results keyed by ``event_id``);
an answer that does not validate is sent back once with the problems, and what still
does not is dropped and counted. The client retries rate limits and server errors. A
batch whose call fails goes to the ``fallback`` extractor, counted and marked
``reextract``; where the LLM answers, its result is merged with the fallback's. One
deadline (``budget_s``) bounds an ``extract`` call; after a timeout or an unavailable
endpoint batches go straight to the fallback for ``cooldown_s``, doubled after each
further failure. Without a fallback, a failure is raised as a typed error. The
enrichment pass's use of it: docs/llm.md ("Budgets and answers").
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import openai
import structlog

from turngraph.schemas.ontology import ONTOLOGY, Ontology, extraction_json_schema
from turngraph.schemas.ontology.json_schema import SCHEMA_NAME
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.answers import parse_answer
from turngraph.workers.extraction.endpoint import LLMEndpoint, OutputMode
from turngraph.workers.extraction.errors import LLM_ERRORS, LLMUnavailableError
from turngraph.workers.extraction.llm_calls import (  # micro_batches: re-exported for callers
    DEFAULT_BATCH_MAX_CHARS,
    DEFAULT_BATCH_MAX_TURNS,
    micro_batches,
    server_text,
)
from turngraph.workers.extraction.models import Extraction, Extractor
from turngraph.workers.extraction.prompts import (
    batch_schema,
    build_messages,
    fitting_schema,
    reask_messages,
    turns_fitting,
)
from turngraph.workers.extraction.references import attached
from turngraph.workers.extraction.validation import union, with_entities
from turngraph.workers.llm_provider import EXTRACTION_COUNTERS, Provider, ProviderStats

__all__ = ["LLMExtractor", "micro_batches"]

log = structlog.get_logger(__name__)

DEFAULT_MAX_OUTPUT_TOKENS = 4_096
"""Output cap per call: a looping model stops here (finish_reason "length") instead of
running into the timeout; ~8 turns of entities fit well inside it."""

DEFAULT_COOLDOWN_S = 30.0
"""After an unavailable endpoint, batches go straight to the fallback for this long."""

MAX_COOLDOWN_FACTOR = 16
"""Consecutive failures double the cooldown up to this factor (30 s -> 8 min)."""

MIN_CALL_S = 0.5
"""A request is not started with less than this left of the budget."""


class _UnusableAnswerError(Exception):
    """Nothing usable came back (unreadable even after the re-ask, or cut off)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class LLMExtractor(Provider):
    """:class:`~workers.extraction.models.Extractor` through the official openai client.

    ``client`` is built once per process from settings (``turngraph.clients``) with its
    ``timeout`` and ``max_retries``; this class adds no retry loop of its own. ``endpoint``
    (one per process, shared with the summarizer) wraps it when given.
    """

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        ontology: Ontology = ONTOLOGY,
        stats: ProviderStats | None = None,
        batch_max_turns: int = DEFAULT_BATCH_MAX_TURNS,
        batch_max_chars: int = DEFAULT_BATCH_MAX_CHARS,
        concurrency: int = 1,
        fallback: Extractor | None = None,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        max_tokens_parameter: str = "max_tokens",
        temperature: float | None = 0.0,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        budget_s: float | None = None,
        short_prompt: bool = False,
        endpoint: LLMEndpoint | None = None,
        output_mode: OutputMode = OutputMode.AUTO,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stats = stats if stats is not None else ProviderStats(EXTRACTION_COUNTERS)
        self.endpoint = endpoint or LLMEndpoint(
            client,
            model=model,
            output_mode=output_mode,
            max_tokens_parameter=max_tokens_parameter,
            temperature=temperature,
            stats=self.stats,
        )
        self.ontology = ontology
        self.batch_max_turns = batch_max_turns
        """Turns per call; halved (for the process) after an answer cut at the limit."""
        self.batch_max_chars = batch_max_chars
        self.concurrency = max(1, concurrency)
        self.fallback = fallback
        self.max_output_tokens = max_output_tokens
        self.cooldown_s = cooldown_s
        self.budget_s = budget_s
        """All LLM work of one ``extract`` call ends within this (None: the client's
        timeout per request, and no overall deadline)."""
        self.short_prompt = short_prompt
        self._clock = clock
        self._schema = extraction_json_schema(ontology)
        self._grammar_turns = turns_fitting(self._schema, max_output_tokens, batch_max_turns)
        """Turns per call whose longest grammar-bound answer fits ``max_output_tokens``."""
        self._lock = threading.Lock()
        self._unavailable_until = 0.0
        self._failures_in_a_row = 0

    @property
    def turns_per_call(self) -> int:
        """``batch_max_turns``, and where the server enforces the bounded schema as a
        grammar, no more turns than fit the output cap with two entities and a fact each."""
        if self.endpoint.mode is OutputMode.JSON_OBJECT_SCHEMA:
            return max(1, min(self.batch_max_turns, self._grammar_turns))
        return self.batch_max_turns

    @property
    def model(self) -> str:
        return self.endpoint.model

    @property
    def mode(self) -> OutputMode:
        """The output mode the endpoint accepts (stepped down on refusal, per process)."""
        return self.endpoint.mode

    def extract(
        self, turns: Sequence[TurnEvent], *, deadline: float | None = None
    ) -> list[Extraction]:
        """One extraction per turn; all LLM work ends by ``deadline`` (a ``clock`` time;
        default: ``budget_s`` from now)."""
        if deadline is None and self.budget_s is not None:
            deadline = self._clock() + self.budget_s
        batches = micro_batches(turns, self.turns_per_call, self.batch_max_chars)

        def one(batch: list[TurnEvent]) -> dict[str, Extraction]:
            return self._extract_batch(batch, deadline)

        if self.concurrency > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=min(self.concurrency, len(batches))) as pool:
                results = list(pool.map(one, batches))
        else:
            results = [one(batch) for batch in batches]
        by_id = {event_id: x for result in results for event_id, x in result.items()}
        return [by_id[turn.event_id] for turn in turns]

    # -- one batch --------------------------------------------------------------------

    def _extract_batch(
        self, batch: list[TurnEvent], deadline: float | None
    ) -> dict[str, Extraction]:
        if self.fallback is not None and self._clock() < self._unavailable_until:
            return self._fall_back(batch, "endpoint_cooling_down")
        if deadline is not None and deadline - self._clock() < MIN_CALL_S:
            if self.fallback is None:
                raise LLMUnavailableError("the batch's LLM budget was spent")
            return self._fall_back(batch, "budget_spent")
        try:
            results = self._llm_batch(batch, deadline)
        except LLM_ERRORS.raised as err:
            if isinstance(err, LLMUnavailableError):
                self._rest()
            if self.fallback is None:
                raise
            return self._fall_back(batch, type(err).__name__)
        except _UnusableAnswerError as err:
            if self.fallback is None:  # as before: empty extractions, each counted
                return self._finish(batch, {})
            return self._fall_back(batch, err.reason)
        with self._lock:
            self._failures_in_a_row = 0
        return results

    def _rest(self) -> None:
        """Straight to the fallback for a while, longer after each failure in a row."""
        with self._lock:
            factor = min(2**self._failures_in_a_row, MAX_COOLDOWN_FACTOR)
            self._failures_in_a_row += 1
            self._unavailable_until = self._clock() + self.cooldown_s * factor

    def _llm_batch(self, batch: list[TurnEvent], deadline: float | None) -> dict[str, Extraction]:
        messages = build_messages(self.ontology, batch, short=self.short_prompt)
        text = self._ask(messages, batch, deadline)
        parsed = parse_answer(text, batch, self.ontology)
        if parsed.problems and self._time_left(deadline):
            self.stats.add(reasks=1, invalid_answers=1)
            log.info("extraction_reask", turns=len(batch), problems=len(parsed.problems))
            retry_text = self._ask(reask_messages(messages, text, parsed.problems), batch, deadline)
            second = parse_answer(retry_text, batch, self.ontology)
            if second.problems:
                self.stats.add(invalid_answers=1)
            if second.usable or not parsed.usable:
                parsed = second
        elif parsed.problems:
            self.stats.add(invalid_answers=1)
        if not parsed.usable:
            raise _UnusableAnswerError("unreadable_answer")
        return self._finish(batch, parsed.extractions)

    def _time_left(self, deadline: float | None) -> bool:
        return deadline is None or deadline - self._clock() >= MIN_CALL_S

    def _ask(
        self, messages: list[dict[str, str]], batch: list[TurnEvent], deadline: float | None
    ) -> str:
        timeout = retries = None
        if deadline is not None:
            remaining = max(MIN_CALL_S, deadline - self._clock())
            timeout, retries = self.endpoint.request_limits(remaining)
        ids = [t.event_id for t in batch]
        # the richest limits whose longest answer fits the output cap: a grammar-enforcing
        # server's answer then always finishes (only the first batch, sent before the
        # mode is known, may carry more turns than fit)
        fit = fitting_schema(self._schema, ids, self.max_output_tokens)
        bounded = fit[0] if fit else batch_schema(self._schema, ids, bounded=True)
        try:
            answer = self.endpoint.complete(
                messages,
                schema_name=SCHEMA_NAME,
                schema=batch_schema(self._schema, ids, bounded=False),
                bounded_schema=bounded,
                max_output_tokens=self.max_output_tokens,
                timeout_s=timeout,
                max_retries=retries,
            )
        except LLM_ERRORS.raised as err:
            if isinstance(err, LLMUnavailableError):
                self.stats.add(transient_failures=1)
            cause = err.__cause__
            log.warning(
                "extraction_call_failed",
                error=type(cause).__name__ if cause else None,
                kind=type(err).__name__,
                status=getattr(cause, "status_code", None),
                server_error=server_text(cause) if isinstance(cause, openai.OpenAIError) else "",
            )
            raise
        self.stats.add(
            calls=1, prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens
        )
        if answer.truncated:
            # A cut answer cannot be read; halving the batch would multiply the calls.
            # The batch falls back; later batches of this process ask for fewer turns.
            self.stats.add(truncated_answers=1)
            with self._lock:
                self.batch_max_turns = max(1, min(self.batch_max_turns, len(batch)) // 2)
            log.warning(
                "extraction_answer_cut",
                turns=len(batch),
                completion_tokens=answer.completion_tokens,
                turns_per_call_now=self.batch_max_turns,
            )
            raise _UnusableAnswerError("answer_cut_at_token_limit")
        return answer.text

    def _finish(
        self, batch: list[TurnEvent], answered: dict[str, Extraction]
    ) -> dict[str, Extraction]:
        missing = [turn for turn in batch if turn.event_id not in answered]
        results = dict(answered)
        if missing:
            self.stats.add(unanswered_turns=len(missing))
            if self.fallback is not None:  # the offline rules for the turns left out
                results.update(self._fall_back(missing, "turns_missing_from_answer"))
            else:  # lost: counted as one drop each, the episode is still stored
                results.update(
                    {t.event_id: Extraction(event_id=t.event_id, dropped=1) for t in missing}
                )
        answered_turns = [turn for turn in batch if turn.event_id in answered]
        if self.fallback is not None and answered_turns:
            # what the offline rules find in the same turns stays: never less than them
            for turn, offline in zip(
                answered_turns, self.fallback.extract(answered_turns), strict=True
            ):
                results[turn.event_id] = union(results[turn.event_id], offline, self.ontology)
        for turn in answered_turns:
            if turn.references:
                # what the producer attached is known without asking
                pairs = (attached(r.kind, r.value) for r in turn.references)
                results[turn.event_id] = with_entities(
                    results[turn.event_id], [p for p in pairs if p], self.ontology
                )
        counted = [x for x in results.values() if not x.reextract]  # the fallback counts its own
        self.stats.add(
            turns=len(counted),
            batches=1,
            dropped=sum(x.dropped for x in counted),
            repaired=sum(x.repaired for x in counted),
        )
        return {turn.event_id: results[turn.event_id] for turn in batch}

    def _fall_back(self, batch: list[TurnEvent], reason: str) -> dict[str, Extraction]:
        assert self.fallback is not None
        extractions = self.fallback.extract(batch)
        self.stats.add(fallback_batches=1, fallback_turns=len(batch), turns=len(batch))
        self.stats.add_reason(reason)
        log.warning("extraction_fallback", reason=reason, turns=len(batch))
        return {
            turn.event_id: extraction.model_copy(update={"reextract": True})
            for turn, extraction in zip(batch, extractions, strict=True)
        }
