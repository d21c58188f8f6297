"""Tool turns collapsed into one-line actions (``seeds/session-recap.md``).

The fact that a file was read matters, its contents do not: observational tools (read,
list, search, recall) become "Read foo.py (15 lines)."; consequential ones (edit, write,
run, remember, ask) keep a short detail; meta tools (status) are dropped. Tool output
never passes through: only its line count and, for commands, whether it failed.
"""

from __future__ import annotations

import re

from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.maintenance.text import shorten

__all__ = [
    "CHANGE", "DETAIL_CHARS", "META", "OBSERVE", "RUN", "collapse", "narrative_line", "tool_name",
]  # fmt: skip

OBSERVE = {
    "read": "Read", "read_file": "Read", "view": "Read", "cat": "Read", "open": "Read",
    "open_file": "Read", "ls": "Listed", "list": "Listed", "list_dir": "Listed",
    "glob": "Listed", "grep": "Searched", "search": "Searched", "find": "Searched",
    "codebase_search": "Searched", "recall": "Recalled", "recall_detail": "Recalled",
    "fetch": "Fetched", "web_fetch": "Fetched",
}  # fmt: skip
"""Observational tools: the action only, with a size."""

CHANGE = {
    "edit": "Edited", "edit_file": "Edited", "str_replace": "Edited", "apply_patch": "Edited",
    "patch": "Edited", "replace": "Edited", "insert": "Edited", "write": "Wrote",
    "write_file": "Wrote", "create": "Wrote", "create_file": "Wrote", "delete": "Deleted",
    "rm": "Deleted", "move": "Moved", "mv": "Moved", "remember": "Remembered",
    "ask": "Asked user", "commit": "Committed",
}  # fmt: skip
"""Consequential tools: they changed state, so a detail is kept."""

RUN = {"run", "bash", "shell", "exec", "terminal", "run_command", "run_in_terminal", "test"}
"""Commands: what ran and whether it failed."""

META = {"status", "todo", "todo_write", "think", "noop", "progress"}
"""Dropped."""

DETAIL_CHARS = 120

_PATH = re.compile(r"(?:[\w.-]+/)*[\w.-]+\.[A-Za-z0-9]{1,8}\b")
_FAILED = re.compile(r"\b(?:error|failed|failure|traceback|exception|exit code [1-9])\b", re.I)


def tool_name(turn: SessionTurn) -> str:
    """The tool's name: the turn's speaker, else the first word of its content."""
    raw = turn.speaker or (turn.content.split(maxsplit=1) or [""])[0]
    return re.sub(r"[^a-z0-9_]", "", raw.lower().replace("-", "_").replace(" ", "_"))


def _target(turn: SessionTurn) -> str | None:
    files = turn.mentioned("File")
    if files:
        return files[0].name
    first_line = turn.content.strip().splitlines()[0] if turn.content.strip() else ""
    match = _PATH.search(first_line)
    return match.group(0) if match else None


def collapse(turn: SessionTurn) -> str | None:
    """One line for a tool turn (None: dropped); other roles are not tool turns."""
    name = tool_name(turn)
    lines = len(turn.content.splitlines()) or 1
    target = _target(turn)
    if name in META:
        return None
    if name == "done":
        first = turn.content.strip().splitlines()[0] if turn.content.strip() else ""
        return f"Finished: {shorten(first, DETAIL_CHARS)}."
    if name in OBSERVE:
        what = target or "results"
        return f"{OBSERVE[name]} {what} ({lines} lines)."
    first = turn.content.strip().splitlines()[0] if turn.content.strip() else ""
    if name in CHANGE:
        verb = CHANGE[name]
        if verb in ("Remembered", "Asked user", "Committed"):
            return f"{verb}: {shorten(first, DETAIL_CHARS)}"
        return f"{verb} {target or 'a file'} ({lines} lines)."
    if name in RUN:
        outcome = "failed" if _FAILED.search(turn.content[-2000:]) else "ok"
        command = f" `{shorten(first[2:], DETAIL_CHARS)}`" if first.startswith("$ ") else ""
        return f"Ran a command{command} ({lines} lines of output, {outcome})."
    return f"Used {name or 'a tool'}{' on ' + target if target else ''} ({lines} lines)."


def narrative_line(turn: SessionTurn, max_chars: int = 600) -> str | None:
    """A turn as one line of a recap's input: tool turns collapsed, prose shortened."""
    if turn.role == "tool":
        return collapse(turn)
    text = " ".join(turn.content.split())
    if not text:
        return None
    return f"{turn.role}: {shorten(text, max_chars)}"
