"""A tool call from a transcript as one short turn (``seeds/session-recap.md``).

Commands and questions keep a short detail (the command line, the question); edits and
writes keep only the file they changed, never its text (a file's text is no memory: it
was injected back into prompts as if it were a fact); observational tools (read, list,
search, fetch) keep only their target; meta tools (todo
lists) are dropped; tool results never pass. Names are mapped onto the canonical ones the
recap's collapsing knows (``Read`` -> ``read``, ``run_shell_command`` -> ``bash``).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "CANONICAL", "DETAIL_CHARS", "DROPPED", "OBSERVATIONAL", "canonical_name",
    "collapse_tool_call",
]  # fmt: skip

CANONICAL = {
    "read": "read", "view": "read", "read_file": "read", "read_many_files": "read",
    "notebookread": "read", "write": "write", "create": "write", "write_file": "write",
    "create_file": "write", "edit": "edit", "multiedit": "edit", "str_replace_editor": "edit",
    "str_replace": "edit", "apply_patch": "edit", "replace": "edit", "notebookedit": "edit",
    "editfiles": "edit", "bash": "bash", "powershell": "bash", "run_shell_command": "bash",
    "shell": "bash", "run_in_terminal": "bash", "runinterminal": "bash", "grep": "grep",
    "rg": "grep", "search_file_content": "grep", "glob": "glob", "ls": "ls",
    "list_directory": "ls", "list_dir": "ls", "webfetch": "fetch", "web_fetch": "fetch",
    "websearch": "search", "web_search": "search", "google_web_search": "search",
    "task": "task", "agent": "task", "todowrite": "todo_write", "update_todo": "todo_write",
    "write_todos": "todo_write", "askuserquestion": "ask", "ask_user": "ask",
    "save_memory": "remember",
}  # fmt: skip
"""Editors' tool names (lower-cased) onto the canonical names."""

OBSERVATIONAL = {"read", "grep", "glob", "ls", "fetch", "search"}
DROPPED = {"todo_write"}
DETAIL_CHARS = 300
"""How much of a command line or a question is kept."""

_TARGET_KEYS = (
    "file_path", "path", "filePath", "absolute_path", "notebook_path", "dir_path", "url",
    "pattern", "query", "files",
)  # fmt: skip


def _cut(text: str, limit: int = DETAIL_CHARS) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _target(args: dict[str, Any]) -> str | None:
    for key in _TARGET_KEYS:
        value = args.get(key)
        if isinstance(value, list) and value and isinstance(value[0], str):
            value = value[0]
        if isinstance(value, str) and value.strip():
            return _cut(value, 200)
    return None


def canonical_name(name: str) -> str:
    """The canonical name of an editor's tool (unknown ones lower-cased, MCP kept)."""
    lowered = name.strip().lower()
    return CANONICAL.get(lowered, lowered.replace("-", "_").replace(" ", "_")[:100])


def collapse_tool_call(name: str, arguments: Any) -> tuple[str, str] | None:
    """``(speaker, content)`` of a tool turn, or None when the tool is dropped."""
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except (ValueError, RecursionError):  # RecursionError: nested past the parser
            arguments = {"input": arguments}
    args: dict[str, Any] = arguments if isinstance(arguments, dict) else {}
    tool = canonical_name(name) or "tool"
    if tool in DROPPED:
        return None
    target = _target(args)
    if tool in OBSERVATIONAL:
        return tool, target or tool
    if tool == "bash":
        command = args.get("command") or args.get("cmd") or ""
        return tool, f"$ {_cut(str(command))}"
    if tool in ("edit", "write"):
        return tool, target or "a file"  # the file's text is no memory (issue 34)
    if tool == "task":
        what = args.get("description") or args.get("prompt") or ""
        return tool, _cut(f"Delegated to a subagent: {what}")
    if tool == "ask":
        question = args.get("question") or json.dumps(args, ensure_ascii=False)
        return tool, _cut(str(question))
    shown = json.dumps(args, ensure_ascii=False, sort_keys=True) if args else ""
    return tool, _cut(f"{target or ''} {shown}".strip() or tool, 200)
