"""The three scopes a memory lives in, from the narrowest to the widest."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = ["PromotionScope", "Scope", "ScopeName", "ScopeNameValue", "ScopeValue"]


class Scope(StrEnum):
    """A scope of memory. Every node carries the (hashed) key of the scopes it belongs to.

    ``session``: one conversation; ``workspace``: a project folder shared by its sessions;
    ``user``: a person across workspaces (written only by promotion or a ``(user)``
    directive).
    """

    SESSION = "session"
    WORKSPACE = "workspace"
    USER = "user"


# What a recall request may name: a Scope, or ``auto`` (the worker picks the scopes and
# their order from the query). A comment, not a docstring: the exported JSON Schema and
# the TypeScript types generated from it stay as they are.
class ScopeName(StrEnum):
    SESSION = Scope.SESSION.value
    WORKSPACE = Scope.WORKSPACE.value
    USER = Scope.USER.value
    AUTO = "auto"


ScopeValue = Literal["session", "workspace", "user"]
"""A :class:`Scope` as its plain value, where a field or a hot path holds text, or a tool's
signature lists the choices (a test keeps the literals and the enums equal)."""

ScopeNameValue = Literal["session", "workspace", "user", "auto"]
"""A :class:`ScopeName` as its plain value."""

PromotionScope = Literal["workspace", "user"]
"""Where a promoted memory may go (a session's memory is not promoted)."""
