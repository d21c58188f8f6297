"""The three scopes a memory lives in, from the narrowest to the widest."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal


class Scope(StrEnum):
    """A scope of memory. Every node carries the (hashed) key of the scopes it belongs to.

    ``session``: one conversation; ``workspace``: a project folder shared by its sessions;
    ``user``: a person across workspaces (written only by promotion or a ``(user)``
    directive).
    """

    SESSION = "session"
    WORKSPACE = "workspace"
    USER = "user"


ScopeValue = Literal["session", "workspace", "user"]
"""A :class:`Scope` as its plain value, where a field or a hot path holds text (a test keeps
the two equal)."""

SCOPE_ORDER: tuple[Scope, ...] = (Scope.SESSION, Scope.WORKSPACE, Scope.USER)
"""The order in which recall prefers scopes (the bridge seed's order)."""
