"""Scope keys as people know them: a folder, a session id, a user name, or the hashed id.

Producers hash raw scope keys with the installation's salt (``producers.scopes``) before
anything leaves; commands that take a scope accept the raw form too and hash it the same
way, so ``turngraph graph show --scope workspace .`` finds what the editor published.
"""

from __future__ import annotations

from pathlib import Path

from turngraph.producers.scopes import ScopeHasher, is_scope_id
from turngraph.schemas.scopes import Scope

__all__ = ["raw_workspace", "scope_id"]


def raw_workspace(raw: str) -> str:
    """The raw workspace key an editor would send for ``raw``: an existing folder's absolute
    path (so ``.`` works), anything else unchanged."""
    path = Path(raw).expanduser()
    return str(path.resolve()) if path.is_dir() else raw


def scope_id(hasher: ScopeHasher, scope: Scope, key: str) -> str:
    """The stored id for ``key``: a hashed id as given, a raw key hashed like the producer
    (a workspace folder given as a path relative to here, such as ``.``, made absolute)."""
    if scope is Scope.WORKSPACE and not is_scope_id(scope, key):
        return hasher.workspace(raw_workspace(key))
    return hasher.id_of(scope, key)
