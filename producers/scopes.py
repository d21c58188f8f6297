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
import secrets
from pathlib import Path

from turngraph.producers.private_files import ensure_private_dir
from turngraph.schemas.scopes import Scope

SALT_FILE = "scope.salt"
"""File under ``settings.data_dir`` holding the installation's salt (hex)."""

SALT_BYTES = 32
"""Length of a new salt."""

ID_HEX_CHARS = 32
"""Hex characters of the HMAC kept in an id (128 bits)."""


_PREFIX = {Scope.SESSION: "s_", Scope.WORKSPACE: "w_", Scope.USER: "u_"}


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

    def session(self, raw: str) -> str:
        """The id of a raw session key."""
        return self.hash(Scope.SESSION, raw)

    def workspace(self, raw: str) -> str:
        """The id of a raw workspace key (e.g. the workspace folder's path)."""
        return self.hash(Scope.WORKSPACE, raw)

    def user(self, raw: str) -> str:
        """The id of a raw user key."""
        return self.hash(Scope.USER, raw)
