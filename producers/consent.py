"""Consent: nothing is published unless publishing is enabled for the workspace and the
endpoint it would go to (SPEC §8). A small JSON file under ``settings.data_dir``."""

from __future__ import annotations

import json
import os
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

CONSENT_FILE = "consent.json"
"""File under ``settings.data_dir`` recording the grants."""

CONSENT_VERSION = 1
"""Format version of the consent file."""

RECHECK_S = 1.0
"""A store re-reads the file at most this often: another process's change applies within it."""


def endpoint_id(redis_url: str) -> str:
    """The endpoint a grant is tied to: scheme, host, port and database of the Redis URL,
    without credentials (a changed endpoint needs consent again)."""
    parts = urlsplit(redis_url)
    host = parts.hostname or "localhost"
    port = parts.port or 6379
    database = parts.path.lstrip("/") or "0"
    return f"{parts.scheme or 'redis'}://{host}:{port}/{database}"


class ConsentStore:
    """Grants per (hashed) workspace and endpoint. Reads are cached until the file changes."""

    def __init__(self, data_dir: Path, *, recheck_s: float = RECHECK_S) -> None:
        self.path = data_dir / CONSENT_FILE
        self._recheck_s = recheck_s
        self._lock = threading.Lock()
        self._cache: dict[str, Any] | None = None
        self._cache_mtime: float | None = None
        self._checked_at = 0.0

    def is_enabled(self, workspace: str, endpoint: str) -> bool:
        """True when publishing from ``workspace`` to ``endpoint`` has been enabled."""
        grant = self._grants().get(self._key(workspace, endpoint))
        return bool(grant and grant.get("enabled"))

    def checker(self, endpoint: str) -> Any:
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
        now = time.monotonic()
        if self._cache is not None and now - self._checked_at < self._recheck_s:
            return self._cache  # publish() asks per event: no stat() call each time
        try:
            mtime = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        with self._lock:
            self._checked_at = now
            if self._cache is None or self._cache_mtime != mtime:
                try:
                    data = json.loads(self.path.read_text())
                    grants = data.get("grants", {}) if isinstance(data, dict) else {}
                except (OSError, ValueError):
                    grants = {}  # unreadable means: no consent
                self._cache, self._cache_mtime = grants, mtime
            return self._cache

    def _set(self, workspace: str, endpoint: str, enabled: bool) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        grants = dict(self._grants())
        grants[self._key(workspace, endpoint)] = {
            "enabled": enabled,
            "changed_at": datetime.now(UTC).isoformat(),
        }
        payload = json.dumps({"version": CONSENT_VERSION, "grants": grants}, indent=2)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".consent.")
        with os.fdopen(fd, "w") as out:
            out.write(payload)
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)  # atomic: readers see the old or the new file
        with self._lock:
            self._cache = None


def consent_endpoint(redis_url: str | None, data_dir: Path) -> str:
    """The endpoint grants are tied to: the configured Redis URL (without credentials), or
    the embedded services of ``data_dir`` (their port changes from run to run)."""
    if redis_url:
        return endpoint_id(redis_url)
    return f"embedded:{data_dir.resolve()}"
