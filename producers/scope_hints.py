"""Hints that let a person recognise their hashed scopes, kept on this machine only.

Scope keys leave the producer hashed (``producers.scopes``), so ``w_3f2a…`` in the graph
says nothing to its owner. When a turn is published, the producer notes here the
workspace folder's **basename** (never its path) and which workspace a session belongs
to, in ``<data_dir>/scope-hints.json`` (mode 600). Nothing of it is sent anywhere:
``turngraph scopes`` joins it with the graph's counts on this machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path, PurePath
from typing import Any

from turngraph.producers.private_files import ensure_private_dir, write_private_text

__all__ = ["HINTS_FILE", "HINTS_VERSION", "MAX_HINT_CHARS", "ScopeHints", "folder_hint"]

HINTS_FILE = "scope-hints.json"
"""File under ``settings.data_dir`` with the hints."""

HINTS_VERSION = 1
"""Format version of the hints file."""

MAX_HINT_CHARS = 100
"""A folder name longer than this is cut."""


def folder_hint(raw_workspace: str) -> str:
    """The part of a raw workspace key a person recognises: the folder's basename."""
    name = PurePath(raw_workspace.rstrip("/\\")).name or raw_workspace
    return name[:MAX_HINT_CHARS]


class ScopeHints:
    """Notes hints once per scope and process (a set lookup per publish after that)."""

    def __init__(self, data_dir: Path) -> None:
        self.path = data_dir / HINTS_FILE
        self._known: set[str] = set()
        self._lock = threading.Lock()

    def note(self, *, workspace_id: str, raw_workspace: str, session_id: str) -> None:
        """Remember the folder name of ``workspace_id`` and the workspace of ``session_id``.
        Never raises: a hint that cannot be written is only a hint lost."""
        if session_id in self._known and workspace_id in self._known:
            return
        with self._lock:
            try:
                self._merge(workspace_id, folder_hint(raw_workspace), session_id)
            except OSError:
                return
            self._known.update((workspace_id, session_id))

    def load(self) -> dict[str, dict[str, Any]]:
        """``{"workspaces": {id: {...}}, "sessions": {id: {...}}}`` (empty when none)."""
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {"workspaces": {}, "sessions": {}}
        if not isinstance(data, dict):
            return {"workspaces": {}, "sessions": {}}
        return {
            "workspaces": dict(data.get("workspaces") or {}),
            "sessions": dict(data.get("sessions") or {}),
        }

    def _merge(self, workspace_id: str, folder: str, session_id: str) -> None:
        with self._file_lock():
            data = self.load()
            now = datetime.now(UTC).isoformat(timespec="seconds")
            workspace = data["workspaces"].setdefault(workspace_id, {"first_seen": now})
            workspace["folder"] = folder
            data["sessions"].setdefault(session_id, {"workspace": workspace_id, "first_seen": now})
            payload = json.dumps({"version": HINTS_VERSION, **data}, indent=1, sort_keys=True)
            write_private_text(self.path, payload)

    @contextlib.contextmanager
    def _file_lock(self) -> Iterator[None]:
        """Several bridges may note at once: read-merge-write under an exclusive lock."""
        ensure_private_dir(self.path.parent)
        fd = os.open(self.path.with_suffix(".lock"), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)
