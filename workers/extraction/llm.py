"""The LLM extractor: structured output from the ontology's JSON Schema, micro-batched.

Consecutive turns of one session go into one call (one answer, per-turn results keyed
by ``event_id``), so calls per turn stay at or below one. An answer that does not
validate (broken JSON, wrong shape, a domain/range violation, a missing turn) is sent
back once with the problems, on a copy of the messages; what still does not validate is
dropped and counted. Rate limits and server errors are retried by the openai client
itself (``max_retries``, honouring ``Retry-After``).

A turn is never lost because extraction failed: with a ``fallback`` extractor (the
offline rules, as the application wires it), a batch whose call fails (an error after
the client's retries, a timeout, an unreadable answer after the re-ask) is extracted by
the fallback instead, counted, and its extractions are marked ``reextract`` so that the
pipeline records them for a later LLM pass. After a timeout or an unavailable endpoint
the extractor goes straight to the fallback for ``cooldown_s``: a dead endpoint costs one
timeout, not one per batch. A server that refuses ``json_schema`` gets ``json_object``
with the schema in the prompt, then no ``response_format``: remembered for the process.
Without a fallback, the failure is raised as a typed error (transient or permanent).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import openai
import structlog

from turngraph.schemas.ontology import ONTOLOGY, Ontology, extraction_json_schema, response_format
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.answers import parse_answer
from turngraph.workers.extraction.errors import (
    LLMConfigurationError,
    LLMRequestError,
    LLMUnavailableError,
)
from turngraph.workers.extraction.llm_calls import (  # micro_batches: re-exported for callers
    DEFAULT_BATCH_MAX_CHARS,
    DEFAULT_BATCH_MAX_TURNS,
    WEAKER_MODE,
    OutputMode,
    convert,
    micro_batches,
    refuses_output_mode,
    request_arguments,
    server_text,
)
from turngraph.workers.extraction.models import Extraction, Extractor
from turngraph.workers.extraction.prompts import build_messages, reask_messages
from turngraph.workers.extraction.references import attached
from turngraph.workers.extraction.stats import ExtractionStats
from turngraph.workers.extraction.validation import with_entities

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

log = structlog.get_logger(__name__)

DEFAULT_MAX_OUTPUT_TOKENS = 4_096
"""Output cap per call: a looping model stops here (finish_reason "length") instead of
running into the timeout; ~8 turns of entities fit well inside it."""

DEFAULT_COOLDOWN_S = 30.0
"""After an unavailable endpoint, batches go straight to the fallback for this long."""

_LLM_ERRORS = (LLMUnavailableError, LLMRequestError, LLMConfigurationError)


class _UnreadableAnswerError(Exception):
    """Nothing usable came back, even after the re-ask."""


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
        fallback: Extractor | None = None,
        max_output_tokens: int | None = DEFAULT_MAX_OUTPUT_TOKENS,
        max_tokens_parameter: str = "max_tokens",
        temperature: float | None = 0.0,
        cooldown_s: float = DEFAULT_COOLDOWN_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.model = model
        self.ontology = ontology
        self.stats = stats if stats is not None else ExtractionStats()
        self.batch_max_turns = batch_max_turns
        self.batch_max_chars = batch_max_chars
        self.concurrency = max(1, concurrency)
        self.fallback = fallback
        self.max_output_tokens = max_output_tokens
        self.max_tokens_parameter = max_tokens_parameter
        self.temperature = temperature
        self.cooldown_s = cooldown_s
        self._clock = clock
        self._response_format = response_format(ontology)
        self._schema = extraction_json_schema(ontology)
        self._lock = threading.Lock()
        self.mode = OutputMode.JSON_SCHEMA
        """The output mode this endpoint accepts (weakened on refusal, per process)."""
        self._unavailable_until = 0.0

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
        if self.fallback is not None and self._clock() < self._unavailable_until:
            return self._fall_back(batch, "endpoint_cooling_down")
        try:
            return self._llm_batch(batch)
        except _LLM_ERRORS as err:
            if self.fallback is None:
                raise
            if isinstance(err, LLMUnavailableError):
                self._unavailable_until = self._clock() + self.cooldown_s
            return self._fall_back(batch, type(err).__name__)
        except _UnreadableAnswerError:
            if self.fallback is None:  # as before: empty extractions, each counted
                return self._finish(batch, {})
            return self._fall_back(batch, "unreadable_answer")

    def _llm_batch(self, batch: list[TurnEvent]) -> dict[str, Extraction]:
        messages, text, truncated = self._ask(batch)
        if truncated and len(batch) > 1:
            # The answer hit the output limit: two smaller calls beat a re-ask.
            half = len(batch) // 2
            return {**self._extract_batch(batch[:half]), **self._extract_batch(batch[half:])}
        parsed = parse_answer(text, batch, self.ontology)
        if parsed.problems:
            self.stats.add(reasks=1, invalid_answers=1)
            log.info("extraction_reask", turns=len(batch), problems=len(parsed.problems))
            retry_text, _ = self._call(reask_messages(messages, text, parsed.problems))
            second = parse_answer(retry_text, batch, self.ontology)
            if second.problems:
                self.stats.add(invalid_answers=1)
            if second.usable or not parsed.usable:
                parsed = second
        if not parsed.usable:
            raise _UnreadableAnswerError
        return self._finish(batch, parsed.extractions)

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
        for turn in batch:
            if turn.references and turn.event_id in answered:
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
        log.warning("extraction_fallback", reason=reason, turns=len(batch))
        return {
            turn.event_id: extraction.model_copy(update={"reextract": True})
            for turn, extraction in zip(batch, extractions, strict=True)
        }

    # -- calls ------------------------------------------------------------------------

    def _ask(self, batch: list[TurnEvent]) -> tuple[list[dict[str, str]], str, bool]:
        """The first call of a batch, in the strongest output mode the server accepts."""
        while True:
            mode = self.mode
            schema = None if mode is OutputMode.JSON_SCHEMA else self._schema
            messages = build_messages(self.ontology, batch, schema)
            try:
                text, truncated = self._call(messages, mode, weaken_on_refusal=True)
            except _Refused:
                continue  # self.mode is weaker now
            return messages, text, truncated

    def _call(
        self,
        messages: list[dict[str, str]],
        mode: OutputMode | None = None,
        *,
        weaken_on_refusal: bool = False,
    ) -> tuple[str, bool]:
        """The answer's text and whether it was cut at the output limit."""
        mode = mode or self.mode
        kwargs = request_arguments(
            model=self.model,
            messages=messages,
            mode=mode,
            response_format=self._response_format,
            max_output_tokens=self.max_output_tokens,
            max_tokens_parameter=self.max_tokens_parameter,
            temperature=self.temperature,
        )
        try:
            completion: ChatCompletion = self.client.chat.completions.create(**kwargs)
        except openai.OpenAIError as err:
            if weaken_on_refusal and mode in WEAKER_MODE and refuses_output_mode(err):
                self._weaken(mode, err)
                raise _Refused from err
            converted = convert(err)
            if isinstance(converted, LLMUnavailableError):
                self.stats.add(transient_failures=1)
            log.warning(
                "extraction_call_failed",
                error=type(err).__name__,
                kind=type(converted).__name__,
                status=getattr(err, "status_code", None),
                server_error=server_text(err),
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

    def _weaken(self, refused: OutputMode, err: openai.OpenAIError) -> None:
        with self._lock:
            if self.mode is not refused:
                return  # another thread already did
            self.mode = WEAKER_MODE[refused]
        self.stats.add(mode_downgrades=1)
        log.warning(
            "extraction_output_mode_refused",
            refused=refused.value,
            now=self.mode.value,
            status=getattr(err, "status_code", None),
            server_error=server_text(err),
        )


class _Refused(Exception):
    """The server refused the output mode; the call is repeated in a weaker one."""
