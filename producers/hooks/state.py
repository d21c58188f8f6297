"""What hooks keep between calls, under ``<data folder>/hooks/``: where each transcript
was read to, the next turn index of each session, and the hooks' counters.

A call holds the transcript's (or session's) lock while it reads, publishes and moves
the offset, so two overlapping calls never publish the same lines twice; the event ids
come from the transcript's own ids, so even a repeat after a lost offset is a counted
duplicate, never a second turn. Files are private (0600) and written atomically.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from turngraph.producers.private_files import ensure_private_dir, write_private_text

try:  # POSIX; elsewhere calls are not serialised (the ids still keep turns unique)
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "COUNTERS_FILE", "HOOKS_DIR", "TAIL_CHECK_BYTES", "HookState", "ReadPosition", "tail_sha256",
]  # fmt: skip

HOOKS_DIR = "hooks"
COUNTERS_FILE = "counters.json"
TAIL_CHECK_BYTES = 4096
"""The last bytes before the offset, hashed: a rewritten transcript no longer matches."""


def _key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


@dataclass
class ReadPosition:
    """Where a transcript (or a payload-fed session) was read to."""

    offset: int = 0
    tail_sha256: str = ""
    next_turn_index: int = 0
    seen: dict[str, int] = field(default_factory=dict)
    """Payload-fed sessions: turn ids already given an index."""
    pending: dict[str, str] = field(default_factory=dict)
    """Cursor: prompts waiting for their answer (published together), by generation id."""
    window_from_turn: int = 0
    """Sessions: the first turn the editor's window still holds (the turn after the last
    compaction): recall leaves this session's turns from here on out."""
    injected_texts: list[str] = field(default_factory=list)
    injected_turn_ids: list[str] = field(default_factory=list)
    injected_digest_ids: list[str] = field(default_factory=list)
    """Sessions: what the hooks injected since the last compaction (the editor keeps it in
    its window): the blocks' texts, the turns they held, the sources of their digests."""


class HookState:
    """The ``hooks/`` folder of one data folder."""

    def __init__(self, data_dir: Path) -> None:
        self.root = data_dir / HOOKS_DIR

    def _path(self, kind: str, key: str) -> Path:
        return self.root / kind / f"{_key(key)}.json"

    @contextlib.contextmanager
    def locked(self, kind: str, key: str) -> Iterator[None]:
        """Hold the lock of one transcript or session for the block."""
        folder = ensure_private_dir(self.root / "locks")
        fd = os.open(folder / f"{kind}-{_key(key)}.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            if fcntl is not None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the lock

    def position(self, kind: str, key: str) -> ReadPosition:
        """The stored position (a fresh one when there is none or it is unreadable)."""
        try:
            data = json.loads(self._path(kind, key).read_text())
            return ReadPosition(**data)
        except (OSError, ValueError, TypeError):
            return ReadPosition()

    def save_position(self, kind: str, key: str, position: ReadPosition) -> None:
        self._write(self._path(kind, key), asdict(position))

    def count(self, **increments: int) -> None:
        """Add to the hooks' counters (calls, published turns, errors by kind)."""
        if not any(increments.values()):
            return
        with self.locked("counters", "all"):
            counters = self.counters()
            for name, value in increments.items():
                counters[name] = counters.get(name, 0) + value
            self._write(self.root / COUNTERS_FILE, counters)

    def counters(self) -> dict[str, int]:
        try:
            data = json.loads((self.root / COUNTERS_FILE).read_text())
        except (OSError, ValueError):
            return {}
        return (
            {k: v for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}
        )

    def _write(self, path: Path, data: Any) -> None:
        write_private_text(path, json.dumps(data))


def tail_sha256(stream: Any, offset: int) -> str:
    """The hash of the bytes just before ``offset`` (empty at 0)."""
    if offset <= 0:
        return ""
    start = max(0, offset - TAIL_CHECK_BYTES)
    stream.seek(start)
    return hashlib.sha256(stream.read(offset - start)).hexdigest()
