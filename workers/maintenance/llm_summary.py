"""The LLM summarizer: one structured call per segment through the official openai client.

The answer's schema comes from :class:`schemas.summaries.SummaryContent`; an answer that
does not validate is sent back once; lists longer than allowed are cut. Every LLM failure
ends in the offline summary, counted per reason with one warning: a summary job never
fails for the LLM. docs/llm.md ("Budgets and answers").
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any

import openai
import pydantic
import structlog

from turngraph.schemas.summaries import SUMMARY_SCHEMA_NAME, SummaryContent, summary_json_schema
from turngraph.schemas.validation import invalid_fields
from turngraph.workers.extraction.answers import NESTED_TOO_DEEP, json_text
from turngraph.workers.extraction.endpoint import LLMEndpoint
from turngraph.workers.extraction.errors import LLM_ERRORS
from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.llm_provider import SUMMARY_COUNTERS, Provider, ProviderStats
from turngraph.workers.maintenance.text import shorten
from turngraph.workers.maintenance.tool_calls import narrative_line
from turngraph.workers.output_bounds import bounded_string, max_answer_tokens

__all__ = [
    "DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS", "MAX_PROMPT_CHARS", "MAX_PROMPT_TURN_CHARS",
    "SUMMARY_LIMIT_LEVELS", "SYSTEM_PROMPT", "LLMSummarizer", "bounded_summary_schema",
    "build_messages", "limits_text", "transcript",
]  # fmt: skip

log = structlog.get_logger(__name__)

MAX_PROMPT_TURN_CHARS = 2_000
"""A turn's text is cut to this in the prompt."""

MAX_PROMPT_CHARS = 24_000
"""The transcript in one prompt is cut to its last this-many characters."""

DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS = 1_024
"""Output cap of a summary call (the prompt asks for about 400 tokens)."""

SYSTEM_PROMPT = """\
You summarize one segment of a conversation between a developer and a coding assistant,
so that a later session can find what was decided and why. Answer with JSON only, in the
given schema:
- topic: a short title of the segment's main focus;
- context: 1-3 bullets on what was being worked on and why;
- decisions: 0-5 bullets, each one decision or conclusion, newest last; when a decision
  replaced an earlier one, say so ("switched from A to B");
- rationale: 0-3 bullets on why the key decisions were made;
- open_questions: 0-5 unresolved questions, risks or follow-ups;
- next_steps: 0-5 concrete next actions.
Use only what the turns say. Keep the whole answer under about 400 tokens. Never copy
secrets, tokens, passwords or redaction markers into the summary."""


SUMMARY_LIMIT_LEVELS = ((5, 200, 120), (3, 120, 80), (2, 80, 60), (1, 64, 48), (1, 32, 32))
"""(items per list, characters per bullet, characters of the topic), richest first."""


def bounded_summary_schema(schema: dict[str, Any], max_output_tokens: int | None) -> dict[str, Any]:
    """``schema`` with every list and string limited (the schema's own item limits, cut
    to a level of :data:`SUMMARY_LIMIT_LEVELS`): the richest whose longest answer fits
    ``max_output_tokens`` (the smallest level when none does), so that a grammar-enforcing
    server's answer finishes."""
    bounded: dict[str, Any] = {}
    for items, bullet_chars, topic_chars in SUMMARY_LIMIT_LEVELS:
        properties: dict[str, Any] = {}
        for name, info in SummaryContent.model_fields.items():
            prop = dict(schema["properties"][name])
            if name == "topic":
                properties[name] = {**prop, **bounded_string(topic_chars, min_length=1)}
                continue
            bound = next((m.max_length for m in info.metadata if hasattr(m, "max_length")), 5)
            least = next((m.min_length for m in info.metadata if hasattr(m, "min_length")), 0)
            prop["items"] = bounded_string(bullet_chars, min_length=1)
            prop["maxItems"] = max(least, min(bound, items))
            if least:
                prop["minItems"] = least
            properties[name] = prop
        bounded = {**schema, "properties": properties}
        if max_output_tokens is None or max_answer_tokens(bounded) <= max_output_tokens:
            break
    return bounded


class _SummaryFailedError(Exception):
    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


_FAILURES: tuple[type[Exception], ...] = (_SummaryFailedError, *LLM_ERRORS.raised)
"""What ends in the offline summary."""


def _bounded(data: Any) -> tuple[Any, int]:
    """Lists longer than :class:`SummaryContent` allows, cut to their limit (and how many
    items were cut): a model that lists 7 decisions loses the last 2, not the summary."""
    if not isinstance(data, dict):
        return data, 0
    cut = 0
    out = dict(data)
    for name, info in SummaryContent.model_fields.items():
        bound = next((m.max_length for m in info.metadata if hasattr(m, "max_length")), None)
        value = out.get(name)
        if isinstance(value, list) and name != "topic" and bound and len(value) > bound:
            cut += len(value) - bound
            out[name] = value[:bound]
    return out, cut


def limits_text() -> str:
    """The schema's limits, for the re-ask."""
    parts = []
    for name, info in SummaryContent.model_fields.items():
        bound = next((m.max_length for m in info.metadata if hasattr(m, "max_length")), None)
        if name != "topic" and bound:
            parts.append(f"{name} at most {bound} items")
    return "; ".join(parts)


def transcript(turns: Sequence[SessionTurn]) -> str:
    """The segment as prompt text: one line per turn, tool turns collapsed."""
    lines = []
    for turn in turns:
        line = narrative_line(turn, MAX_PROMPT_TURN_CHARS)
        if line:
            lines.append(f"[{turn.turn_index}] {line}")
    text = "\n".join(lines)
    return text[-MAX_PROMPT_CHARS:]


def build_messages(
    turns: Sequence[SessionTurn], hints: SummaryContent, references: dict[str, Any]
) -> list[dict[str, str]]:
    payload = {
        "found_by_rules": {"decisions": list(hints.decisions), "references": references},
        "turns": transcript(turns),
    }
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]


class LLMSummarizer(Provider):
    """Summaries through ``endpoint`` (one per process, see ``turngraph.app``)."""

    def __init__(
        self,
        client: openai.OpenAI,
        *,
        model: str,
        stats: ProviderStats | None = None,
        endpoint: LLMEndpoint | None = None,
        max_output_tokens: int | None = DEFAULT_SUMMARY_MAX_OUTPUT_TOKENS,
        temperature: float | None = 0.0,
    ) -> None:
        self.endpoint = endpoint or LLMEndpoint(client, model=model, temperature=temperature)
        self.stats = stats if stats is not None else ProviderStats(SUMMARY_COUNTERS)
        self.max_output_tokens = max_output_tokens
        self._schema = summary_json_schema()
        self._bounded = bounded_summary_schema(self._schema, max_output_tokens)

    @property
    def model(self) -> str:
        return self.endpoint.model

    def summarize(
        self, turns: Sequence[SessionTurn], fallback: SummaryContent, references: dict[str, Any]
    ) -> tuple[SummaryContent, bool]:
        """The LLM's summary, or ``fallback`` (the offline one) when the LLM failed in
        any way; the flag says whether the LLM's answer was used."""
        started = time.monotonic()
        self.stats.add(summaries=1)
        try:
            return self._summarize(turns, fallback, references), True
        except _FAILURES as err:
            reason = err.reason if isinstance(err, _SummaryFailedError) else type(err).__name__
            self.stats.add(fallbacks=1)
            self.stats.add_reason(reason)
            log.warning(
                "summary_llm_fallback",
                reason=reason,
                error=None if isinstance(err, _SummaryFailedError) else str(err),
                turns=len(turns),
                seconds=round(time.monotonic() - started, 1),
                stored="offline summary",
            )
            return fallback, False

    def _summarize(
        self, turns: Sequence[SessionTurn], fallback: SummaryContent, references: dict[str, Any]
    ) -> SummaryContent:
        messages = build_messages(turns, fallback, references)
        text = self._call(messages)
        content, problems = self._parse(text)
        if content is None:
            self.stats.add(reasks=1)
            log.info("summary_reask", problems=len(problems))
            retry = [
                *messages,
                {"role": "assistant", "content": text[:4000]},
                {
                    "role": "user",
                    "content": "That answer is invalid: "
                    + "; ".join(problems[:10])
                    + f". Limits: topic at most 120 characters; {limits_text()}."
                    + " Answer again with JSON in the schema only.",
                },
            ]
            content, problems = self._parse(self._call(retry))
        if content is None:
            raise _SummaryFailedError("invalid_twice")
        return content

    def _call(self, messages: list[dict[str, str]]) -> str:
        answer = self.endpoint.complete(
            messages,
            schema_name=SUMMARY_SCHEMA_NAME,
            schema=self._schema,
            bounded_schema=self._bounded,
            max_output_tokens=self.max_output_tokens,
        )
        self.stats.add(
            calls=1, prompt_tokens=answer.prompt_tokens, completion_tokens=answer.completion_tokens
        )
        if answer.truncated:
            raise _SummaryFailedError("answer_cut_at_token_limit")
        return answer.text

    def _parse(self, text: str) -> tuple[SummaryContent | None, list[str]]:
        if not text.strip():
            return None, ["the answer was empty (or a refusal)"]
        try:
            data = json.loads(json_text(text))
        except json.JSONDecodeError as err:
            return None, [f"not valid JSON: {err.msg} at char {err.pos}"]
        except RecursionError:
            return None, [NESTED_TOO_DEEP]
        data, cut = _bounded(data)
        try:
            content = SummaryContent.model_validate(data)
        except pydantic.ValidationError as err:
            return None, [
                f"does not match the schema at: {', '.join(invalid_fields(err, 'answer'))}"
            ]
        if cut:
            self.stats.add(items_cut=cut)
        return content.model_copy(update={"topic": shorten(content.topic, 120)}), []
