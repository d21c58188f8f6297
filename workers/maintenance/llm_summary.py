"""The LLM summarizer: one structured call per segment through the official openai client.

The answer's JSON Schema is generated from :class:`schemas.summaries.SummaryContent`; an
answer that does not validate is sent back once with the problems (Graphiti's habit),
and if the second one fails too the offline summary is used instead (counted), so a
summary is never half-written. Tool turns reach the prompt collapsed to one line each.
Rate limits and 5xx are retried by the openai client itself; when it gives up, the job
fails with a transient error and RQ retries it.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import openai
import pydantic
import structlog

from turngraph.schemas.summaries import SummaryContent, summary_response_format
from turngraph.schemas.validation import invalid_fields
from turngraph.workers.extraction.errors import (
    LLMConfigurationError,
    LLMRequestError,
    LLMUnavailableError,
)
from turngraph.workers.maintenance.text import shorten
from turngraph.workers.maintenance.tool_calls import narrative_line
from turngraph.workers.maintenance.turns import SessionTurn

if TYPE_CHECKING:
    from openai.types.chat import ChatCompletion

log = structlog.get_logger(__name__)

MAX_PROMPT_TURN_CHARS = 2_000
"""A turn's text is cut to this in the prompt."""

MAX_PROMPT_CHARS = 24_000
"""The transcript in one prompt is cut to its last this-many characters."""

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


@dataclass
class SummaryStats:
    """Counters of one summarizer (per worker process); read by benches and metrics."""

    summaries: int = 0
    calls: int = 0
    reasks: int = 0
    fallbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return {f.name: getattr(self, f.name) for f in fields(self) if f.name != "_lock"}


def _convert(err: openai.OpenAIError) -> Exception:
    if isinstance(err, openai.APITimeoutError | openai.APIConnectionError):
        return LLMUnavailableError("LLM endpoint unreachable or too slow")
    if isinstance(err, openai.APIStatusError):
        if err.status_code >= 500 or err.status_code in (408, 409, 429):
            return LLMUnavailableError(f"LLM endpoint answered {err.status_code} after retries")
        if err.status_code in (401, 403, 404):
            return LLMConfigurationError(
                f"LLM endpoint answered {err.status_code}: check the API key, base URL and model"
            )
        return LLMRequestError(f"LLM endpoint rejected the request ({err.status_code})")
    return LLMRequestError(f"LLM call failed ({type(err).__name__})")


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
        "found_by_rules": {
            "decisions": list(hints.decisions),
            "references": references,
        },
        "turns": transcript(turns),
    }
    return [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": json.dumps(payload, ensure_ascii=False)},
    ]


class LLMSummarizer:
    """Summaries through ``client`` (built once per process in ``turngraph.clients``)."""

    def __init__(
        self, client: openai.OpenAI, *, model: str, stats: SummaryStats | None = None
    ) -> None:
        self.client = client
        self.model = model
        self.stats = stats if stats is not None else SummaryStats()
        self._format = summary_response_format()

    def summarize(
        self, turns: Sequence[SessionTurn], fallback: SummaryContent, references: dict[str, Any]
    ) -> tuple[SummaryContent, bool]:
        """The LLM's summary, or ``fallback`` (the offline one) when both answers were
        invalid; the flag says whether the LLM's answer was used."""
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
                    + ". Answer again with JSON in the schema only.",
                },
            ]
            content, problems = self._parse(self._call(retry))
        self.stats.add(summaries=1)
        if content is None:
            self.stats.add(fallbacks=1)
            log.warning("summary_llm_invalid_twice", problems=len(problems))
            return fallback, False
        return content, True

    def _call(self, messages: list[dict[str, str]]) -> str:
        try:
            completion: ChatCompletion = self.client.chat.completions.create(  # type: ignore[call-overload]
                model=self.model, messages=messages, response_format=self._format
            )
        except openai.OpenAIError as err:
            converted = _convert(err)
            log.warning("summary_call_failed", error=type(err).__name__)
            raise converted from err
        usage = completion.usage
        self.stats.add(
            calls=1,
            prompt_tokens=usage.prompt_tokens if usage else 0,
            completion_tokens=usage.completion_tokens if usage else 0,
        )
        if not completion.choices:
            return ""
        return completion.choices[0].message.content or ""

    @staticmethod
    def _parse(text: str) -> tuple[SummaryContent | None, list[str]]:
        if not text.strip():
            return None, ["the answer was empty (or a refusal)"]
        try:
            data = json.loads(text)
        except json.JSONDecodeError as err:
            return None, [f"not valid JSON: {err.msg} at char {err.pos}"]
        try:
            content = SummaryContent.model_validate(data)
        except pydantic.ValidationError as err:
            return None, [
                f"does not match the schema at: {', '.join(invalid_fields(err, 'answer'))}"
            ]
        return content.model_copy(update={"topic": shorten(content.topic, 120)}), []
