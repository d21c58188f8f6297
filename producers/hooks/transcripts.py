"""The turns a JSONL transcript holds: Claude Code's and the Copilot event log's.

Both are read into :class:`TranscriptTurn` the same way (user and assistant text, tool
calls collapsed by ``producers.hooks.tools``; tool results, sidechains and compaction
summaries skipped), each turn with the transcript's own id. :func:`read_new_lines` reads
complete lines from an offset and skips, counted, a line over ``max_line_bytes``.
docs/hooks.md ("Transcripts", "Offsets").
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, BinaryIO

from turngraph.producers.hooks.tools import collapse_tool_call

__all__ = [
    "IMAGE_MARK", "MAX_LINE_BYTES", "MAX_READ_BYTES", "ParseCounts", "ReadResult",
    "TranscriptTurn", "parse_lines", "read_new_lines",
]  # fmt: skip

MAX_LINE_BYTES = 1_000_000
"""A longer transcript line (a pasted file, a huge tool result) is skipped and counted."""

MAX_READ_BYTES = 16_000_000
"""One call reads at most this much; the rest is read by the next call."""

IMAGE_MARK = "[image]"


@dataclass(frozen=True)
class TranscriptTurn:
    """One turn to publish; ``source_id`` is the transcript's own id of it."""

    source_id: str
    role: str
    content: str
    speaker: str = ""
    occurred_at: datetime | None = None


@dataclass
class ReadResult:
    """What one read found: the lines, where it stopped, what it skipped."""

    lines: list[bytes] = field(default_factory=list)
    end_offset: int = 0
    skipped_long: int = 0


def read_new_lines(
    stream: BinaryIO,
    offset: int,
    *,
    max_line_bytes: int = MAX_LINE_BYTES,
    max_read_bytes: int = MAX_READ_BYTES,
) -> ReadResult:
    """Complete lines from ``offset`` on (see the module docstring)."""
    stream.seek(offset)
    result = ReadResult(end_offset=offset)
    read = 0
    while read < max_read_bytes:
        chunk = stream.readline(max_line_bytes + 1)
        if not chunk:
            break
        if not chunk.endswith(b"\n"):
            if len(chunk) <= max_line_bytes:
                break  # still being written: the next call reads it whole
            skipped = len(chunk)
            while not chunk.endswith(b"\n"):  # the rest of the long line, in pieces
                if read + skipped >= max_read_bytes:
                    # A line without end (a transcript path naming /dev/zero read until
                    # the editor killed the hook): skip what was read; the next call
                    # goes on from there and counts the line's tail as malformed.
                    result.skipped_long += 1
                    result.end_offset += skipped
                    return result
                chunk = stream.readline(max_line_bytes + 1)
                if not chunk:
                    return result  # the long line is not finished yet either
                skipped += len(chunk)
            result.skipped_long += 1
            result.end_offset += skipped
            read += skipped
            continue
        result.end_offset += len(chunk)
        read += len(chunk)
        if chunk.strip():
            result.lines.append(chunk)
    return result


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


@dataclass
class ParseCounts:
    """Lines that were not turns, by why."""

    malformed: int = 0
    sidechain: int = 0
    compaction: int = 0
    boundaries: int = 0
    """Of the compaction lines, those that mark where the editor compacted its window
    (Claude Code's ``compact_boundary``, Copilot's compaction and truncation events; not
    Claude's title lines of ``type`` summary)."""


def parse_lines(lines: list[bytes], counts: ParseCounts) -> Iterator[TranscriptTurn]:
    """The turns in transcript lines, either format, in order."""
    for raw in lines:
        try:
            entry = json.loads(raw)
        except (ValueError, UnicodeDecodeError, RecursionError):  # nested past the parser
            counts.malformed += 1
            continue
        if not isinstance(entry, dict):
            counts.malformed += 1
            continue
        kind = entry.get("type")
        if isinstance(kind, str) and "." in kind:
            yield from _copilot_event(entry, kind, counts)
        elif kind in ("user", "assistant"):
            yield from _claude_message(entry, kind, counts)
        elif kind == "summary" or entry.get("subtype") == "compact_boundary":
            counts.compaction += 1
            counts.boundaries += kind != "summary"


def _claude_message(
    entry: dict[str, Any], kind: str, counts: ParseCounts
) -> Iterator[TranscriptTurn]:
    if entry.get("isSidechain"):
        counts.sidechain += 1
        return
    if entry.get("isCompactSummary"):
        counts.compaction += 1
        return
    if entry.get("isMeta"):
        return
    uid = entry.get("uuid")
    message = entry.get("message")
    if not isinstance(uid, str) or not isinstance(message, dict):
        counts.malformed += 1
        return
    when = _when(entry.get("timestamp"))
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        counts.malformed += 1
        return
    texts: list[str] = []
    for n, block in enumerate(blocks):
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif btype == "image":
            texts.append(IMAGE_MARK)
        elif btype == "tool_use" and kind == "assistant":
            collapsed = collapse_tool_call(str(block.get("name") or ""), block.get("input"))
            if collapsed:
                tool_id = block.get("id") if isinstance(block.get("id"), str) else f"{uid}:{n}"
                yield TranscriptTurn(f"{tool_id}", "tool", collapsed[1], collapsed[0], when)
        # tool_result, thinking, redacted_thinking, ...: not turns
    text = "\n".join(t for t in texts if t.strip()).strip()
    if text and text != IMAGE_MARK * text.count(IMAGE_MARK):
        yield TranscriptTurn(uid, kind, text, "", when)
    elif text:
        yield TranscriptTurn(uid, kind, "(shared an image)", "", when)


def _copilot_event(
    entry: dict[str, Any], kind: str, counts: ParseCounts
) -> Iterator[TranscriptTurn]:
    uid = entry.get("id")
    data = entry.get("data")
    if not isinstance(uid, str) or not isinstance(data, dict):
        counts.malformed += 1
        return
    if "compaction" in kind or kind == "session.truncation":
        counts.compaction += 1
        counts.boundaries += 1
        return
    if data.get("parentToolCallId") or kind.startswith("subagent."):
        counts.sidechain += 1
        return
    when = _when(entry.get("timestamp"))
    raw_text = data.get("content")
    text: str = raw_text if isinstance(raw_text, str) else ""
    if kind == "user.message":
        attachments = data.get("attachments")
        images = sum(
            1
            for a in attachments or []
            if isinstance(a, dict) and "image" in str(a.get("type", a.get("mimeType", "")))
        )
        body = "\n".join([text.strip(), *([IMAGE_MARK] * images)]).strip()
        if body:
            yield TranscriptTurn(
                uid, "user", body if text.strip() else "(shared an image)", "", when
            )
    elif kind == "assistant.message":
        if text.strip():
            yield TranscriptTurn(uid, "assistant", text.strip(), "", when)
        for n, request in enumerate(data.get("toolRequests") or []):
            if not isinstance(request, dict):
                continue
            collapsed = collapse_tool_call(str(request.get("name") or ""), request.get("arguments"))
            if collapsed:
                call_id = request.get("toolCallId")
                source = call_id if isinstance(call_id, str) else f"{uid}:{n}"
                yield TranscriptTurn(source, "tool", collapsed[1], collapsed[0], when)
