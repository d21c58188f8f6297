"""One chat-completion call: the request's shape per output mode, the openai errors as
ours, and the server's error text (truncated) for the log.

Output modes, from the strongest to the weakest, for servers that refuse one (older vLLM,
llama.cpp builds, proxies answer 400 to ``json_schema``): ``json_schema`` (strict
structured output), ``json_object`` (JSON mode; the schema goes into the prompt), and
``prompt_only`` (no ``response_format`` at all).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from enum import Enum
from typing import Any

import openai

from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.errors import (
    LLMConfigurationError,
    LLMRequestError,
    LLMUnavailableError,
)
from turngraph.workers.extraction.prompts import MAX_TURN_CHARS

DEFAULT_BATCH_MAX_TURNS = 8
"""Most turns in one call; consecutive turns of one session only."""

DEFAULT_BATCH_MAX_CHARS = 16_000
"""Most turn characters in one call (the prompt stays well inside small context windows)."""

TRANSIENT_STATUS = frozenset({408, 409, 429})
"""Besides 5xx: statuses worth another try later (the client already retried them)."""

MAX_SERVER_TEXT_CHARS = 200
"""How much of a server's error message goes into the log (never the request)."""

MAX_TOKENS_PARAMETERS = ("max_tokens", "max_completion_tokens")
"""What servers call the output cap: ``max_tokens`` (vLLM, Ollama, llama.cpp, older OpenAI
models) or ``max_completion_tokens`` (OpenAI's reasoning models refuse the other)."""


class OutputMode(str, Enum):
    JSON_SCHEMA = "json_schema"
    JSON_OBJECT = "json_object"
    PROMPT_ONLY = "prompt_only"


WEAKER_MODE = {
    OutputMode.JSON_SCHEMA: OutputMode.JSON_OBJECT,
    OutputMode.JSON_OBJECT: OutputMode.PROMPT_ONLY,
}

_NOT_A_FORMAT_PROBLEM = re.compile(
    r"(?i)context length|context window|maximum context|too long|too many tokens|"
    r"max_tokens|max_completion_tokens|temperature|model .*not found|unsupported model"
)
"""400s that a weaker output mode cannot fix (the prompt is too long, a parameter name)."""


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


def server_text(err: openai.OpenAIError) -> str:
    """The server's own error message, one line, at most :data:`MAX_SERVER_TEXT_CHARS`."""
    text = ""
    if isinstance(err, openai.APIStatusError):
        body = err.body
        if isinstance(body, dict):
            inner = body.get("error", body)
            message = inner.get("message") if isinstance(inner, dict) else inner
            text = str(message or "")
        elif body is not None:
            text = str(body)
        text = text or err.message
    return " ".join(text.split())[:MAX_SERVER_TEXT_CHARS]


def refuses_output_mode(err: openai.OpenAIError) -> bool:
    """A 400 that a weaker output mode may avoid (not a too-long prompt, a bad parameter)."""
    return (
        isinstance(err, openai.BadRequestError)
        and _NOT_A_FORMAT_PROBLEM.search(server_text(err)) is None
    )


def convert(err: openai.OpenAIError) -> Exception:
    """An openai error as one of ours: transient (try later) or permanent."""
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


def request_arguments(
    *,
    model: str,
    messages: list[dict[str, str]],
    mode: OutputMode,
    response_format: dict[str, Any],
    max_output_tokens: int | None,
    max_tokens_parameter: str,
    temperature: float | None,
) -> dict[str, Any]:
    """The keyword arguments of ``chat.completions.create`` for one call."""
    kwargs: dict[str, Any] = {"model": model, "messages": messages}
    if mode is OutputMode.JSON_SCHEMA:
        kwargs["response_format"] = response_format
    elif mode is OutputMode.JSON_OBJECT:
        kwargs["response_format"] = {"type": "json_object"}
    if max_output_tokens is not None:
        kwargs[max_tokens_parameter] = max_output_tokens
    if temperature is not None:  # None: reasoning models refuse any value but their default
        kwargs["temperature"] = temperature
    return kwargs
