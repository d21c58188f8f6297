"""Scope keys (session, workspace, user) hashed with a per-installation salt.

A raw workspace path or user name never leaves the producer: it becomes a keyed hash
(HMAC-SHA256 with a random salt created once under the data folder, mode 600), so the
same key always maps to the same id on this installation and to nothing guessable
elsewhere.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from turngraph.producers.private_files import ensure_private_dir
from turngraph.schemas.scopes import Scope

__all__ = [
    "ID_HEX_CHARS", "SALT_BYTES", "SALT_FILE", "ScopeHasher", "is_scope_id", "load_or_create_salt",
]  # fmt: skip

SALT_FILE = "scope.salt"
"""File under ``settings.data_dir`` holding the installation's salt (hex)."""

SALT_BYTES = 32
"""Length of a new salt."""

ID_HEX_CHARS = 32
"""Hex characters of the HMAC kept in an id (128 bits)."""


_PREFIX = {Scope.SESSION: "s_", Scope.WORKSPACE: "w_", Scope.USER: "u_"}


def is_scope_id(kind: Scope | str, key: str) -> bool:
    """True when ``key`` already is an id of that kind (``w_`` + 32 hex for a workspace)."""
    return re.fullmatch(f"{_PREFIX[Scope(kind)]}[0-9a-f]{{{ID_HEX_CHARS}}}", key) is not None


def load_or_create_salt(data_dir: Path) -> bytes:
    """The installation's salt: created once (atomically, mode 600), then read back."""
    path = data_dir / SALT_FILE
    if not path.exists():
        ensure_private_dir(data_dir)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            pass  # another process created it first: use theirs
        else:
            with os.fdopen(fd, "w") as out:
                out.write(secrets.token_hex(SALT_BYTES))
    return bytes.fromhex(path.read_text().strip())


class ScopeHasher:
    """Turns raw scope keys into ids matching ``[A-Za-z0-9_-]{1,128}``."""

    def __init__(self, salt: bytes) -> None:
        if len(salt) < 16:
            raise ValueError("the scope salt must be at least 16 bytes")
        self._salt = salt

    @classmethod
    def for_data_dir(cls, data_dir: Path) -> ScopeHasher:
        """The hasher of this installation (salt under ``data_dir``)."""
        return cls(load_or_create_salt(data_dir))

    def hash(self, kind: Scope | str, raw: str) -> str:
        """The id of one raw scope key, e.g. ``w_3f2a…`` for a workspace path."""
        kind = Scope(kind)
        digest = hmac.new(self._salt, f"{kind.value}\x1f{raw}".encode(), hashlib.sha256)
        return _PREFIX[kind] + digest.hexdigest()[:ID_HEX_CHARS]

    def id_of(self, kind: Scope | str, key: str) -> str:
        """The one rule for scope keys everywhere (commands, bridge, MCP): an id of that
        kind (as ``turngraph scopes`` lists it) is kept as it is, a raw key is hashed."""
        return key if is_scope_id(kind, key) else self.hash(kind, key)

    def session(self, key: str) -> str:
        """The id of a session: its raw key hashed, or its id as given."""
        return self.id_of(Scope.SESSION, key)

    def workspace(self, key: str) -> str:
        """The id of a workspace: its raw key (the folder's path) hashed, or its id."""
        return self.id_of(Scope.WORKSPACE, key)

    def user(self, key: str) -> str:
        """The id of a user: its raw key hashed, or its id as given."""
        return self.id_of(Scope.USER, key)
