"""Names of an assistant's tools and tool calls are Tools, never People.

A developer's conversation names the agent's tools: tool turns carry the call's name as
their speaker (``run_in_terminal``, ``edit_file``), and prose says "then Edit File will
patch it", "ask Grep", "@read_file". The everyday-entity rules would take a capitalised
pair or an addressed name for a person; these rules see what looks like a tool first.
"""

from __future__ import annotations

import re

from turngraph.workers.extraction import references as refs

__all__ = ["ROLE_WORDS", "TOOL_WORDS", "is_tool_name", "is_tool_speaker", "retyped"]

TOOL_WORDS = frozenset(
    """
    file files folder directory dir terminal shell bash command commands cmd search grep
    glob find browser fetch web url edit read write create delete rename move copy run
    exec execute tool tools editor notebook patch diff apply list todo todos task tasks
    test tests lint format build deploy install query sql http api mcp workspace symbol
    symbols definition references codebase semantic
    """.split()  # noqa: SIM905
)
"""Words that make a name a tool's ("Read File", "Run In Terminal", "Grep")."""

_IDENTIFIER = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[_.:-][A-Za-z0-9]+)+$")
_WORDS = re.compile(r"[A-Za-z]+")


def is_tool_name(name: str) -> bool:
    """A call name (``edit_file``, ``mcp__github__create_issue``, ``fs.read``) or words of
    a tool's ("Read File", "Grep")."""
    stripped = name.strip().lstrip("@")
    if not stripped:
        return False
    if _IDENTIFIER.match(stripped):
        return True
    words = [w.lower() for w in _WORDS.findall(stripped)]
    return bool(words) and any(w in TOOL_WORDS for w in words)


ROLE_WORDS = frozenset({"user", "assistant", "system", "tool", "model", "ai", "human"})


def is_tool_speaker(speaker: str, tool_turn: bool) -> bool:
    """A tool turn's speaker is the call's name (a role word is no name); any turn's
    speaker written like a call name (``edit_file``) is one too."""
    name = speaker.strip()
    if not name or name.lower() in ROLE_WORDS:
        return False
    return tool_turn or bool(_IDENTIFIER.match(name))


def retyped(hits: list[refs.Hit]) -> list[refs.Hit]:
    """``hits`` with every Person that is a tool's name made a Tool."""
    return [
        refs.Hit(h.start, h.end, "Tool", h.name.lstrip("@"))
        if h.type == "Person" and is_tool_name(h.name)
        else h
        for h in hits
    ]
