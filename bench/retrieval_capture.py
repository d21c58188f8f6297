"""A replayed RealMem store, kept and asked again: ``bench.retrieval --realmem --capture
FILE`` writes it, ``--from-capture FILE`` re-runs only the questions against it.

The online replay (``bench.retrieval_replay``) takes ~20 minutes under load, nearly all
of it ingest and distillation; the ranking is a few milliseconds per question. A recall
replica's index is exactly what the change stream told it (the replay's replica starts on
an empty graph), so the capture is that stream, entry by entry, with each question's
recall request written in at the stream position the replica had applied when it was
asked, and the moment it was asked (recency is measured from it). Re-running applies the
entries to a fresh in-process :class:`~workers.recall.index.MemoryIndex` (the replica's
own ``apply``) up to each question and calls the replica's ``search`` with the recorded
request: the same store at the same point, ranked by the code of the tree that runs it.

So a capture answers ranking and assembly changes (``workers/recall/``) in minutes. What
made the memories (extraction, summaries, promotion) is frozen in it: a change there
needs a new replay. The file is gzipped JSON lines: one ``meta`` line, then ``change``
lines (the stream's ``change`` field as written) and ``ask`` lines in stream order.
"""

from __future__ import annotations

import gzip
import json
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import redis

from turngraph.schemas.changes import CHANGE_FIELD, decode_change
from turngraph.schemas.recall import RecallRequest
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.search import search

CAPTURE_VERSION = 1

XRANGE_PAGE = 1_000


@dataclass(frozen=True, slots=True)
class Asked:
    """One recall request as the replay sent it, and where in the stream it was asked."""

    question_id: str
    with_context: bool
    position: str  # the last change-stream entry the replica had applied
    now: datetime
    request: RecallRequest
    ranked: list[str]  # the replica's answer, as turn ids


def _stream_id(value: str) -> tuple[int, int]:
    ms, _, seq = value.partition("-")
    return int(ms), int(seq or 0)


def _entries(conn: redis.Redis, stream: str) -> Iterator[tuple[str, str]]:
    start = "-"
    while True:
        page: Any = conn.xrange(stream, min=start, max="+", count=XRANGE_PAGE)
        for entry_id, fields in page:
            raw = fields.get(CHANGE_FIELD.encode(), b"")
            yield entry_id.decode(), raw.decode()
        if len(page) < XRANGE_PAGE:
            return
        start = "(" + page[-1][0].decode()


def write_capture(
    path: Path, conn: redis.Redis, stream: str, asked: Sequence[Asked], meta: dict[str, Any]
) -> int:
    """Write the stream and the questions in stream order; returns the entries written."""
    pending = sorted(asked, key=lambda a: _stream_id(a.position))
    written = 0
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=3) as out:
        out.write(json.dumps({"meta": {"version": CAPTURE_VERSION, **meta}}) + "\n")
        for entry_id, change in _entries(conn, stream):
            while pending and _stream_id(pending[0].position) < _stream_id(entry_id):
                out.write(_ask_line(pending.pop(0)))
            out.write(json.dumps({"id": entry_id, "change": change}) + "\n")
            written += 1
        for item in pending:
            out.write(_ask_line(item))
    return written


def _ask_line(item: Asked) -> str:
    return (
        json.dumps(
            {
                "ask": item.question_id,
                "context": item.with_context,
                "now": item.now.isoformat(),
                "request": item.request.model_dump(mode="json"),
                "replayed": item.ranked,
            }
        )
        + "\n"
    )


@dataclass
class Rerun:
    """Ranked turn ids per question id, with and without context, from a capture."""

    meta: dict[str, Any]
    with_context: dict[str, list[str]]
    without_context: dict[str, list[str]]
    timings_ms: list[float]
    memories: int
    kinds: dict[str, int]
    model: str
    same_as_replay: int = 0
    """Answers (turn ids in order) identical to the replica's in the replay."""
    degraded: int = 0
    """Answers flagged ``degraded`` (a query embedding past its budget on a busy machine)."""


def ranked_turns(results: Sequence[Any]) -> list[str]:
    """Turn ids in answer order (a result uses up as many places as it has sources)."""
    ranked: list[str] = []
    for result in results:
        ranked += [e for e in result.source_event_ids if e not in ranked]
    return ranked


def rerun(
    path: Path,
    embedder: Embedder | None,
    wanted: set[str] | None = None,
    ranking: Ranking = DEFAULT,
) -> Rerun:
    """Apply the capture's stream to a fresh index ranked by ``ranking`` and ask every
    question (those in ``wanted``, when given) at its recorded point with the recorded
    request."""
    index = MemoryIndex(embedder, ranking)
    out = Rerun({}, {}, {}, [], 0, {}, "none")
    if not path.is_file():
        raise SystemExit(f"no capture at {path}: write one with --capture")
    with gzip.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            item = json.loads(line)
            if "meta" in item:
                if item["meta"].get("version") != CAPTURE_VERSION:
                    raise SystemExit(f"{path} is a capture of another version: replay again")
                out.meta = item["meta"]
            elif "change" in item:
                index.apply(decode_change({CHANGE_FIELD: item["change"]}))
            elif wanted is None or item["ask"] in wanted:
                request = RecallRequest.model_validate(item["request"])
                started = time.perf_counter()
                response = search(index, request, now=datetime.fromisoformat(item["now"]))
                out.timings_ms.append((time.perf_counter() - started) * 1000)
                out.degraded += bool(response.degraded)
                into = out.with_context if item["context"] else out.without_context
                into[item["ask"]] = ranked_turns(response.results)
                out.same_as_replay += into[item["ask"]] == item.get("replayed")
    out.memories = len(index)
    for memory in index.snapshot().values():
        out.kinds[memory.kind.value] = out.kinds.get(memory.kind.value, 0) + 1
    out.model = index.semantic.model if index.semantic is not None else "none"
    return out
