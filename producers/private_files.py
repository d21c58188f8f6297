"""The data folder holds the scope salt, consent, passwords and the memory itself: it and
every folder under it are private to the user (mode 700), its files mode 600."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

__all__ = [
    "PRIVATE_DIR_MODE", "PRIVATE_FILE_MODE", "PRIVATE_UMASK", "ensure_private_dir",
    "write_private_text",
]  # fmt: skip

PRIVATE_DIR_MODE = 0o700
"""Mode of the data folder and of every folder turngraph creates under it."""

PRIVATE_FILE_MODE = 0o600
"""Mode of every file turngraph writes under the data folder."""

PRIVATE_UMASK = 0o077
"""The umask embedded servers run with, so their own files are private too."""


def ensure_private_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents) and make it mode 700; returns ``path``.

    An existing folder is tightened too (an older install, or one made by hand); one that
    belongs to someone else is left as it is.
    """
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    try:
        if path.stat().st_mode & 0o777 != PRIVATE_DIR_MODE:
            path.chmod(PRIVATE_DIR_MODE)
    except PermissionError:
        pass  # not ours to change
    return path


def write_private_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` atomically (readers see the old file or the new one),
    mode 600 from the first byte; concurrent writers each write a temporary file of their
    own (the last replace wins)."""
    ensure_private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")  # mode 600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
