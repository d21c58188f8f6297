"""Bytes on stdin and stdout for the bridge: one request per line, decoded here as UTF-8
whatever the process's locale says, one ASCII JSON reply per line, flushed at once.

Every line gets exactly one reply, an empty one included (``INVALID_REQUEST``); a line
over :data:`~turngraph.schemas.json_lines.MAX_LINE_BYTES` is skipped to its end and
answered with the ``id`` its beginning names."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Protocol

from turngraph.schemas.bridge_common import error_reply
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.json_lines import ID_WINDOW_CHARS, MAX_LINE_BYTES, request_id, too_long

__all__ = [
    "LineHandler", "LongLine", "decode_line", "encode_reply", "handle_bytes", "read_lines",
    "serve",
]  # fmt: skip


@dataclass(frozen=True)
class LongLine:
    """A line over the limit: skipped, only its beginning kept (to read its ``id``)."""

    head: bytes


class LineHandler(Protocol):
    """What answers the lines (:class:`producers.operations.Operations`)."""

    def handle_line(self, line: str) -> dict[str, Any]: ...

    def close(self) -> None: ...


def read_lines(stream: BinaryIO, max_bytes: int | None = None) -> Iterator[bytes | LongLine]:
    """Lines of ``stream`` as bytes; a line longer than ``max_bytes`` (default
    ``MAX_LINE_BYTES``) is skipped to its end and yielded as a :class:`LongLine`, and the
    next line is read intact."""
    limit = max_bytes or MAX_LINE_BYTES
    while True:
        raw = stream.readline(limit + 1)
        if not raw:
            return
        if len(raw) > limit and not raw.endswith(b"\n"):
            head = raw[: ID_WINDOW_CHARS * 4]
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(limit)
            yield LongLine(head)
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


def serve(bridge: LineHandler, lines_in: BinaryIO, lines_out: BinaryIO) -> int:
    """Answer every line of ``lines_in`` until its end, then close the bridge.

    Reads and writes bytes (``sys.stdin.buffer``, ``sys.stdout.buffer``): decoding per line
    means one bad line costs that line only, and every earlier reply is already written
    and flushed.
    """
    try:
        for raw in read_lines(lines_in):
            if isinstance(raw, LongLine):
                refused = too_long()
                reply = error_reply(
                    ErrorCode.INVALID_REQUEST, refused.user_message, refused.remediation
                ).model_dump(mode="json", exclude_none=True)
                found = request_id(raw.head.decode("utf-8", "replace"))
                if found is not None:
                    reply = {"id": found, **reply}
            else:
                reply = handle_bytes(bridge, raw)
            lines_out.write(encode_reply(reply))
            lines_out.flush()
    finally:
        bridge.close()
    return 0


def handle_bytes(bridge: LineHandler, raw: bytes) -> dict[str, Any]:
    """One request line as bytes: invalid UTF-8 is one ``INVALID_ENCODING`` reply."""
    line = decode_line(raw)
    if line is None:
        reply = error_reply(
            ErrorCode.INVALID_ENCODING,
            "the request line is not valid UTF-8",
            "encode every line as UTF-8",
        ).model_dump(mode="json", exclude_none=True)
        found = request_id(raw.decode("utf-8", "replace"))
        return {"id": found, **reply} if found is not None else reply
    return bridge.handle_line(line)
