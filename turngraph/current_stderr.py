"""A stream that writes to whatever `sys.stderr` is at the time of each line."""

from __future__ import annotations

import sys

__all__ = ["CurrentStderr"]


class CurrentStderr:
    """Writes to whatever `sys.stderr` is at the time of each line.

    structlog caches a logger on first use with the file it was given; a stream bound at
    set-up would keep writing to a stream that was since replaced (a test's capture, a
    caller's redirect), so the lines would go where nobody reads them. Every structlog
    configuration in turngraph (the CLI's, the hooks') writes through this.
    """

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
