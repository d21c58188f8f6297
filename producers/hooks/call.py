"""One hook call read and counted, wherever it arrives: ``turngraph hook`` (stdin) and the
local endpoint (``POST /v1/hooks/{editor}/{event}``) both start here."""

from __future__ import annotations

from turngraph.producers.hooks.editors import EDITORS
from turngraph.producers.hooks.payload import HookAction, HookCall, HookInputError, parse_payload
from turngraph.producers.hooks.state import HookState

__all__ = ["CAPTURE_ACTIONS", "hook_target", "read_call"]

CAPTURE_ACTIONS = frozenset({HookAction.CAPTURE, HookAction.SUMMARIZE, HookAction.SESSION_END})
"""Events that print nothing: the endpoint acknowledges them at once and works after."""


def hook_target(event: str, editor: str) -> tuple[HookAction, str] | None:
    """The action and editor named by ``turngraph hook EVENT --editor EDITOR`` (or the
    endpoint's path), or None when either is unknown."""
    if editor not in EDITORS:
        return None
    try:
        return HookAction(event), editor
    except ValueError:
        return None


def read_call(
    state: HookState, action: HookAction, raw: bytes, *, project_dir: str | None
) -> HookCall | None:
    """The payload read into a :class:`HookCall` and the call counted; None (counted as
    ``error_bad_payload``) when it cannot be used."""
    try:
        call = parse_payload(raw, action, project_dir=project_dir)
    except HookInputError:
        state.count(error_bad_payload=1)
        return None
    state.count(**{f"calls_{action.value.replace('-', '_')}": 1})
    return call
