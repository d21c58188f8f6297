"""An editor's hook payload (JSON on stdin), read into one shape whatever the editor.

Claude Code, Gemini CLI and VS Code's Copilot-compatible payloads use snake_case
(``session_id``, ``transcript_path``); Copilot CLI's camelCase configuration names
(``sessionStart``) send camelCase fields (``sessionId``, ``transcriptPath``); Cursor sends
``conversation_id`` and ``workspace_roots``; Codex adds ``turn_id`` and, on ``Stop``,
``last_assistant_message``. Only the fields a hook needs are read; a
payload that is not a JSON object, or lacks a session, is a :class:`HookInputError`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from turngraph.schemas.errors import InvalidPayloadError

__all__ = [
    "MAX_FIELD_CHARS", "MAX_PAYLOAD_BYTES", "HookAction", "HookCall", "HookInputError",
    "parse_payload",
]  # fmt: skip

MAX_PAYLOAD_BYTES = 4_000_000
"""Longer stdin is refused (a prompt is at most a few hundred kilobytes)."""

MAX_FIELD_CHARS = 1_000_000
"""A longer prompt or response is refused rather than half-read."""


class HookAction(StrEnum):
    """What ``turngraph hook EVENT`` does; the editors' own event names map onto these."""

    SESSION_START = "session-start"
    """The previous session's recap and the standing decisions, as context."""
    PROMPT = "prompt"
    """Memory for the prompt, as context, within the deadline (fail-open)."""
    CAPTURE = "capture"
    """Publish the turns the transcript (or the payload) gained since the last call."""
    SUMMARIZE = "summarize"
    """Capture, then summarize the session (before compaction)."""
    SESSION_END = "session-end"
    """Capture, then summarize the session (at its end)."""


class HookInputError(InvalidPayloadError):
    """The payload cannot be used; the message names the problem, never the content."""


@dataclass(frozen=True)
class HookCall:
    """One hook invocation, normalised."""

    action: HookAction
    session_id: str
    workspace: Path
    transcript_path: Path | None = None
    prompt: str | None = None
    """The user's prompt (prompt hooks; Gemini's AfterAgent; Cursor's beforeSubmitPrompt)."""
    response: str | None = None
    """The assistant's final text, where the editor sends it (Gemini, Cursor)."""
    transformed_prompt: str | None = None
    """Copilot CLI's model-facing prompt (``userPromptTransformed``)."""
    turn_id: str | None = None
    """The editor's own id of this turn (Cursor's ``generation_id``, Codex's ``turn_id``)."""
    timestamp: str | None = None
    """When the editor fired the hook (tells two equal exchanges apart)."""


def _text(payload: dict[str, Any], *names: str) -> str | None:
    for name in names:
        value = payload.get(name)
        if value is None:
            continue
        if not isinstance(value, str):
            raise HookInputError(f"payload field {name} must be a string")
        if len(value) > MAX_FIELD_CHARS:
            raise HookInputError(f"payload field {name} is longer than {MAX_FIELD_CHARS}")
        return value
    return None


def _workspace(payload: dict[str, Any], project_dir: str | None) -> Path:
    roots = payload.get("workspace_roots")
    candidates: list[Any] = [project_dir]
    if isinstance(roots, list) and roots:
        candidates.append(roots[0])
    candidates.append(payload.get("cwd"))
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip() and "\x00" not in candidate:
            return Path(candidate).expanduser().resolve()
    raise HookInputError("payload names no workspace (cwd or workspace_roots)")


def parse_payload(raw: bytes, action: HookAction, *, project_dir: str | None = None) -> HookCall:
    """A :class:`HookCall` from stdin bytes; ``project_dir`` is the editor's project
    variable (``CLAUDE_PROJECT_DIR``, ``GEMINI_PROJECT_DIR``) when it sets one.

    Raises :class:`HookInputError` for anything that is not a usable payload."""
    if len(raw) > MAX_PAYLOAD_BYTES:
        raise HookInputError(f"payload is larger than {MAX_PAYLOAD_BYTES} bytes")
    try:
        payload = json.loads(raw)
    except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the parser
        raise HookInputError("payload is not valid JSON") from None
    if not isinstance(payload, dict):
        raise HookInputError("payload is not a JSON object")
    session = _text(payload, "session_id", "sessionId", "conversation_id")
    if not session or not session.strip():
        raise HookInputError("payload names no session (session_id)")
    transcript = _text(payload, "transcript_path", "transcriptPath")
    return HookCall(
        action=action,
        session_id=session,
        workspace=_workspace(payload, project_dir),
        transcript_path=Path(transcript) if transcript and "\x00" not in transcript else None,
        prompt=_text(payload, "prompt"),
        response=_text(payload, "prompt_response", "text", "last_assistant_message"),
        transformed_prompt=_text(payload, "transformedPrompt", "transformed_prompt"),
        turn_id=_text(payload, "generation_id", "turn_id"),
        timestamp=str(payload.get("timestamp") or "")[:64] or None,
    )
