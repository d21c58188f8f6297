"""Each editor's hook configuration and context-injection format (as documented, 2026-11).

:data:`EDITORS` names the files each editor reads (``--project`` folder-relative,
``--user`` home-relative) and its events; :func:`hook_entry` writes an entry in the
editor's shape and :func:`context_output` the field context goes back in. The table for
users: docs/hooks.md ("What each editor gets").
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

from turngraph.producers.hooks.payload import HookAction

__all__ = [
    "EDITORS", "PROJECT_DIR_VARIABLES", "PROMPT_TIMEOUT_S", "A", "Binding", "EditorSpec",
    "HttpTarget", "Shape", "context_output", "entry_commands", "entry_urls", "hook_entry",
    "hook_url", "in_background",
]  # fmt: skip

Shape = Literal["claude", "vscode", "copilot", "cursor", "gemini", "codex"]

A = HookAction


@dataclass(frozen=True)
class Binding:
    """One editor event, the action it runs, the editor's timeout for it."""

    event: str
    action: HookAction
    timeout_s: int
    http: bool = False
    """Claude Code runs an ``http`` hook for it quietly (checked on 2.1.332: ``SessionStart``
    runs command hooks only; a failed ``SessionEnd`` http hook prints an error)."""
    background: bool = False
    """The editor waits for the command but reads no answer: it is started in the background
    with the payload on its stdin, and the hook returns at once (:func:`in_background`).
    Claude Code waits for ``SessionEnd`` hooks before it exits (up to their timeout) and
    cancels what is still running then."""


@dataclass(frozen=True)
class EditorSpec:
    name: str
    project_file: str
    """Relative to the project folder."""
    user_file: str
    """Relative to the home folder."""
    shape: Shape
    bindings: tuple[Binding, ...]
    transcript: bool
    """Capture reads the transcript (else the turn comes in the payload)."""
    prompt_context: bool
    """The prompt hook can add context (else it only captures the prompt)."""
    version_key: bool = False
    """The file carries ``"version": 1``."""

    def binding(self, action: HookAction) -> Binding | None:
        return next((b for b in self.bindings if b.action is action), None)


PROMPT_TIMEOUT_S = 10
"""The editors' timeout for the prompt hook: only a safety net, our own deadline (750 ms,
fail-open) is what the user waits at most; a loaded machine must not turn a slow start-up
into a killed hook."""

EDITORS: dict[str, EditorSpec] = {
    spec.name: spec
    for spec in (
        EditorSpec(
            "claude-code", ".claude/settings.local.json", ".claude/settings.json", "claude",
            (Binding("SessionStart", A.SESSION_START, 10),
             Binding("UserPromptSubmit", A.PROMPT, PROMPT_TIMEOUT_S, http=True),
             Binding("Stop", A.CAPTURE, 10, http=True),
             Binding("PreCompact", A.SUMMARIZE, 60, http=True),
             Binding("SessionEnd", A.SESSION_END, 60, background=True)),
            transcript=True, prompt_context=True,
        ),
        EditorSpec(
            "vscode", ".github/hooks/turngraph.json", ".copilot/hooks/turngraph.json", "vscode",
            (Binding("SessionStart", A.SESSION_START, 10), Binding("Stop", A.CAPTURE, 10),
             Binding("PreCompact", A.SUMMARIZE, 60)),
            transcript=True, prompt_context=False,
        ),
        EditorSpec(
            "copilot-cli", ".github/hooks/turngraph-copilot.json",
            ".copilot/hooks/turngraph-copilot.json", "copilot",
            (Binding("sessionStart", A.SESSION_START, 10),
             Binding("userPromptTransformed", A.PROMPT, PROMPT_TIMEOUT_S),
             Binding("agentStop", A.CAPTURE, 10), Binding("preCompact", A.SUMMARIZE, 60),
             Binding("sessionEnd", A.SESSION_END, 60)),
            transcript=True, prompt_context=True, version_key=True,
        ),
        EditorSpec(
            "cursor", ".cursor/hooks.json", ".cursor/hooks.json", "cursor",
            (Binding("sessionStart", A.SESSION_START, 10),
             Binding("beforeSubmitPrompt", A.PROMPT, PROMPT_TIMEOUT_S),
             Binding("afterAgentResponse", A.CAPTURE, 10), Binding("preCompact", A.SUMMARIZE, 60),
             Binding("sessionEnd", A.SESSION_END, 60)),
            transcript=False, prompt_context=False, version_key=True,
        ),
        EditorSpec(
            "codex", ".codex/hooks.json", ".codex/hooks.json", "codex",
            (Binding("SessionStart", A.SESSION_START, 10),
             Binding("UserPromptSubmit", A.PROMPT, PROMPT_TIMEOUT_S),
             Binding("Stop", A.CAPTURE, 10), Binding("PreCompact", A.SUMMARIZE, 60)),
            transcript=False, prompt_context=True,
        ),
        EditorSpec(
            "gemini", ".gemini/settings.json", ".gemini/settings.json", "gemini",
            (Binding("SessionStart", A.SESSION_START, 10),
             Binding("BeforeAgent", A.PROMPT, PROMPT_TIMEOUT_S),
             Binding("AfterAgent", A.CAPTURE, 10), Binding("PreCompress", A.SUMMARIZE, 60),
             Binding("SessionEnd", A.SESSION_END, 60)),
            transcript=False, prompt_context=True,
        ),
    )
}  # fmt: skip
"""The editors ``turngraph hooks install`` knows, by name."""

PROJECT_DIR_VARIABLES = ("CLAUDE_PROJECT_DIR", "GEMINI_PROJECT_DIR", "CURSOR_PROJECT_DIR")
"""Environment variables editors set to the project folder."""


@dataclass(frozen=True)
class HttpTarget:
    """Where Claude Code's ``http`` hooks POST: the endpoint's base URL and its token."""

    url: str
    token: str


def hook_url(base_url: str, editor: str, action: HookAction) -> str:
    """The endpoint's URL for one of our hooks."""
    return f"{base_url.rstrip('/')}/v1/hooks/{editor}/{action.value}"


def in_background(command: str) -> str:
    """``command`` run in the background by the editor's POSIX shell, the hook's stdin
    handed to it (an asynchronous command's stdin is otherwise ``/dev/null``) and its
    output dropped, so the shell, and with it the hook, ends at once."""
    return f"{{ {command} <&3 >/dev/null 2>&1 & }} 3<&0"


def hook_entry(
    spec: EditorSpec, binding: Binding, command: str, http: HttpTarget | None = None
) -> dict[str, Any]:
    """The configuration entry that runs ``command`` for ``binding``, in the editor's shape
    (an ``http`` hook to ``http`` instead where the editor runs one for the event)."""
    if http is not None and binding.http and spec.shape == "claude":
        url = hook_url(http.url, spec.name, binding.action)
        return {"hooks": [{"type": "http", "url": url, "timeout": binding.timeout_s,
                           "headers": {"Authorization": f"Bearer {http.token}"}}]}  # fmt: skip
    if spec.shape in ("claude", "codex"):
        if binding.background and os.name != "nt":  # Windows runs hooks in other shells
            command = in_background(command)
        return {"hooks": [{"type": "command", "command": command, "timeout": binding.timeout_s}]}
    if spec.shape == "gemini":
        return {
            "hooks": [
                {
                    "name": f"turngraph-{binding.action.value}",
                    "type": "command",
                    "command": command,
                    "timeout": binding.timeout_s * 1000,
                }
            ]
        }
    if spec.shape == "copilot":
        return {
            "type": "command",
            "bash": command,
            "powershell": command,
            "timeoutSec": binding.timeout_s,
        }
    if spec.shape == "cursor":
        return {"command": command, "timeout": binding.timeout_s}
    return {"type": "command", "command": command, "timeout": binding.timeout_s}


def entry_commands(entry: Any) -> list[str]:
    """Every command an entry (in any of the shapes) runs."""
    if not isinstance(entry, dict):
        return []
    found = [entry[k] for k in ("command", "bash", "powershell") if isinstance(entry.get(k), str)]
    for inner in entry.get("hooks") or []:
        found.extend(entry_commands(inner))
    return found


def entry_urls(entry: Any) -> list[str]:
    """Every URL an entry's ``http`` hooks POST to."""
    if not isinstance(entry, dict):
        return []
    found = (
        [entry["url"]] if entry.get("type") == "http" and isinstance(entry.get("url"), str) else []
    )
    for inner in entry.get("hooks") or []:
        found.extend(entry_urls(inner))
    return found


def context_output(
    spec: EditorSpec, action: HookAction, text: str, *, prompt: str | None = None
) -> dict[str, Any] | None:
    """What the hook prints to hand ``text`` to the model (None: the editor takes none)."""
    binding = spec.binding(action)
    if binding is None or not text:
        return None
    if action is HookAction.PROMPT and not spec.prompt_context:
        return None
    if spec.shape == "copilot":
        if action is HookAction.PROMPT:
            if prompt is None:
                return None
            return {"modifiedTransformedPrompt": f"{text}\n\n{prompt}"}
        return {"additionalContext": text}
    if spec.shape == "cursor":
        return {"additional_context": text} if action is HookAction.SESSION_START else None
    return {"hookSpecificOutput": {"hookEventName": binding.event, "additionalContext": text}}
