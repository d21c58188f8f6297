"""Scope keys as people know them: a folder, a session id, a user name, or the hashed id.

Producers hash raw scope keys with the installation's salt (``producers.scopes``) before
anything leaves; commands that take a scope accept the raw form too and hash it the same
way, so ``turngraph graph show --scope workspace .`` finds what the editor published.
"""

from __future__ import annotations

import re
from pathlib import Path

from turngraph.producers.scopes import ID_HEX_CHARS, ScopeHasher
from turngraph.schemas.scopes import Scope

_PREFIXES = {Scope.SESSION: "s_", Scope.WORKSPACE: "w_", Scope.USER: "u_"}


def is_hashed(scope: Scope, key: str) -> bool:
    """True when ``key`` already is a hashed id of ``scope`` (e.g. ``w_`` + 32 hex)."""
    return re.fullmatch(f"{_PREFIXES[scope]}[0-9a-f]{{{ID_HEX_CHARS}}}", key) is not None


def raw_workspace(raw: str) -> str:
    """The raw workspace key an editor would send for ``raw``: an existing folder's absolute
    path (so ``.`` works), anything else unchanged."""
    path = Path(raw).expanduser()
    return str(path.resolve()) if path.is_dir() else raw


def scope_id(hasher: ScopeHasher, scope: Scope, key: str) -> str:
    """The stored id for ``key``: a hashed id as given, a raw key hashed like the producer."""
    if is_hashed(scope, key):
        return key
    if scope is Scope.WORKSPACE:
        return hasher.workspace(raw_workspace(key))
    return hasher.hash(scope, key)
