"""Consent: nothing is published unless publishing is enabled for the workspace and the
endpoint it would go to (SPEC §8). A small JSON file under ``settings.data_dir``."""

from __future__ import annotations

import json
import shlex
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from turngraph.producers.private_files import ensure_private_dir, write_private_text

__all__ = [
    "CONSENT_FILE", "CONSENT_VERSION", "ConsentStore", "consent_endpoint", "enable_command",
    "endpoint_id",
]  # fmt: skip

CONSENT_FILE = "consent.json"
"""File under ``settings.data_dir`` recording the grants."""

CONSENT_VERSION = 1
"""Format version of the consent file."""


def endpoint_id(redis_url: str) -> str:
    """The endpoint a grant is tied to: scheme, host, port and database of the Redis URL,
    without credentials (a changed endpoint needs consent again)."""
    parts = urlsplit(redis_url)
    host = parts.hostname or "localhost"
    port = parts.port or 6379
    database = parts.path.lstrip("/") or "0"
    return f"{parts.scheme or 'redis'}://{host}:{port}/{database}"


def enable_command(raw_workspace: str) -> str:
    """The remediation of a refusal for want of consent: the command that grants it for
    this workspace, its folder written out (quoted for a POSIX shell)."""
    folder = raw_workspace.strip() or "."
    return f"run: turngraph consent enable --workspace {shlex.quote(folder)}"


class ConsentStore:
    """Grants per (hashed) workspace and endpoint.

    Every check looks at the file (one ``stat``) and re-reads it only when it changed, so a
    grant or withdrawal made by another process (``turngraph consent enable``) applies to
    the very next publication of a running bridge.
    """

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / CONSENT_FILE
        self._lock = threading.Lock()
        self._cache: dict[str, Any] = {}
        self._cache_version: tuple[int, int, int] | None = None

    def is_enabled(self, workspace: str, endpoint: str) -> bool:
        """True when publishing from ``workspace`` to ``endpoint`` has been enabled."""
        grant = self._grants().get(self._key(workspace, endpoint))
        return bool(grant and grant.get("enabled"))

    def checker(self, endpoint: str) -> Callable[[str], bool]:
        """A ``Publisher`` consent check for one endpoint: ``workspace -> bool``."""
        return lambda workspace: self.is_enabled(workspace, endpoint)

    def enable(self, workspace: str, endpoint: str) -> None:
        """Record consent for ``workspace`` to publish to ``endpoint``."""
        self._set(workspace, endpoint, True)

    def disable(self, workspace: str, endpoint: str) -> None:
        """Withdraw consent; later publications are dropped and counted."""
        self._set(workspace, endpoint, False)

    def grants(self) -> dict[str, dict[str, Any]]:
        """Every recorded grant, keyed ``workspace|endpoint``."""
        return dict(self._grants())

    @staticmethod
    def _key(workspace: str, endpoint: str) -> str:
        return f"{workspace}|{endpoint}"

    def _grants(self) -> dict[str, dict[str, Any]]:
        try:
            found = self.path.stat()
        except FileNotFoundError:
            return {}
        # Writers replace the file (a new inode), so this changes with every write even
        # where the clock's granularity would hide a second write within one tick.
        version = (found.st_ino, found.st_mtime_ns, found.st_size)
        with self._lock:
            if self._cache_version != version:
                try:
                    data = json.loads(self.path.read_text())
                    grants = data.get("grants", {}) if isinstance(data, dict) else {}
                except (OSError, ValueError):
                    grants = {}  # unreadable means: no consent
                self._cache, self._cache_version = grants, version
            return self._cache

    def _set(self, workspace: str, endpoint: str, enabled: bool) -> None:
        ensure_private_dir(self.path.parent)
        grants = dict(self._grants())
        grants[self._key(workspace, endpoint)] = {
            "enabled": enabled,
            "changed_at": datetime.now(UTC).isoformat(),
        }
        payload = json.dumps({"version": CONSENT_VERSION, "grants": grants}, indent=2)
        write_private_text(self.path, payload)
        with self._lock:
            self._cache_version = None


def consent_endpoint(redis_url: str | None, data_dir: Path) -> str:
    """The endpoint grants are tied to: the configured Redis URL (without credentials), or
    the embedded services of ``data_dir`` (their port changes from run to run)."""
    if redis_url:
        return endpoint_id(redis_url)
    return f"embedded:{data_dir.resolve()}"
