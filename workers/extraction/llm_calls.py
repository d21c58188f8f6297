"""Around one chat-completion call: micro-batches of turns, the openai errors as ours,
and the server's error text (truncated) for the log. The request itself is built by
:mod:`workers.extraction.endpoint` (output modes, system prompt)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.prompts import MAX_TURN_CHARS

if TYPE_CHECKING:
    import openai

__all__ = [
    "DEFAULT_BATCH_MAX_CHARS", "DEFAULT_BATCH_MAX_TURNS", "MAX_SERVER_TEXT_CHARS", "micro_batches",
    "server_text",
]  # fmt: skip

DEFAULT_BATCH_MAX_TURNS = 8
"""Most turns in one call; consecutive turns of one session only."""

DEFAULT_BATCH_MAX_CHARS = 16_000
"""Most turn characters in one call (the prompt stays well inside small context windows)."""

MAX_SERVER_TEXT_CHARS = 200
"""How much of a server's error message goes into the log (never the request)."""


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
    import openai  # here, not at the top: only a process with an LLM endpoint loads it

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
