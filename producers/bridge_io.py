"""Bytes on stdin and stdout for the bridge: one request per line, decoded here as UTF-8
whatever the process's locale says, one ASCII JSON reply per line, flushed at once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, BinaryIO

MAX_LINE_BYTES = 4_000_000
"""A line read from stdin is cut (and refused) past this many bytes: memory stays bounded."""


def read_lines(stream: BinaryIO, max_bytes: int | None = None) -> Iterator[bytes | None]:
    """Lines of ``stream`` as bytes; a line longer than ``max_bytes`` (default
    ``MAX_LINE_BYTES``) is skipped to its end and yielded as None, and the next line is
    read intact."""
    limit = max_bytes or MAX_LINE_BYTES
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(limit)
            yield None
            continue
        yield raw


def decode_line(raw: bytes) -> str | None:
    """The line as text, or None when it is not valid UTF-8 (strict: no replacement
    characters slipping into memory, no surrogates)."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


def encode_reply(reply: dict[str, Any]) -> bytes:
    """One reply line: ASCII-only JSON (non-ASCII text is \\u-escaped), whatever the locale."""
    return (json.dumps(reply, ensure_ascii=True) + "\n").encode("ascii")
