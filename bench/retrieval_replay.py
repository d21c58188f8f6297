"""Online replay through the real pipeline, as an editor runs it (``bench.retrieval``).

Embedded Redis and graph servers; turns published with the
:class:`~producers.publisher.Publisher`, ingested by the batching RQ worker (offline
extractor, graph writer, embeddings), distilled by the maintenance RQ worker (summaries,
compaction, rolling context: the product's defaults) unless ``distill`` is off, and
served by a recall worker tailing the change stream, asked over Redis with the
:class:`~producers.recall_client.RecallClient`.

Before each question: everything published so far is ingested and distilled (both
workers run in burst mode until their queues are empty) and the recall worker has applied
the change stream up to its end (polled on the replica's heartbeat position). When a
session's first question comes, the previous session's recap is made first, as an editor
with hooks offers it at session start (``recap_session``, what the recap op runs). Each
question is asked twice, with its ``conversation_context`` and without.
"""

from __future__ import annotations

import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis

from bench.retrieval_capture import Asked, ranked_turns, write_capture
from bench.retrieval_eval import CUTOFFS
from turngraph.app import (
    build_admission,
    build_ingest_worker,
    build_maintenance_worker,
    build_recall_worker,
)
from turngraph.clients import build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.producers.connection import open_publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.keys import RECALL_REPLY_PREFIX
from turngraph.schemas.recall import ConversationTurn, RecallRequest
from turngraph.schemas.turn_event import TurnEvent
from turngraph.settings import Settings
from turngraph.workers.maintenance.recaps import recap_session
from turngraph.workers.recall.worker import RecallWorker

CAUGHT_UP_TIMEOUT_S = 120.0
"""Longest wait for the recall worker to apply the change stream before a question."""

POLL_S = 0.005

RECALL_DEADLINE_MS = 10_000


@dataclass
class Replay:
    """Ranked turn ids per question id, with and without context; what the run cost."""

    with_context: dict[str, list[str]] = field(default_factory=dict)
    without_context: dict[str, list[str]] = field(default_factory=dict)
    timings_ms: list[float] = field(default_factory=list)
    recaps: int = 0
    memories: int = 0
    kinds: dict[str, int] = field(default_factory=dict)
    model: str = "none"


def _stream_id(value: str) -> tuple[int, int]:
    ms, _, seq = value.partition("-")
    return int(ms), int(seq or 0)


def _caught_up(conn: redis.Redis, stream: str, recall: RecallWorker) -> str:
    """Wait until ``recall`` applied the stream to its current end; returns that end."""
    last: Any = conn.xrevrange(stream, count=1)
    if not last:
        return "0-0"
    noted = last[0][0].decode()
    end = _stream_id(noted)
    deadline = time.monotonic() + CAUGHT_UP_TIMEOUT_S
    waiter = threading.Event()
    while _stream_id(recall.heartbeat().position) < end:
        if time.monotonic() > deadline:
            raise SystemExit("the recall worker did not catch up with the change stream")
        waiter.wait(POLL_S)
    return noted


def _ranked(response: Any) -> list[str]:
    if not response.success:
        raise SystemExit(f"recall failed: {response.error_code}")
    return ranked_turns(response.results)


def _request(question: dict[str, Any], context: bool) -> RecallRequest:
    """The request an editor sends for ``question`` (what ``RecallClient.recall`` builds)."""
    request_id = uuid.uuid4().hex
    return RecallRequest(
        request_id=request_id,
        reply_to=RECALL_REPLY_PREFIX + request_id,
        query=question["question"],
        workspace=question["workspace"],
        user=question["user"],
        session_id=question["session_id"],
        conversation_context=tuple(
            ConversationTurn(**t) for t in (question["conversation_context"] if context else [])
        ),
        max_results=max(CUTOFFS),
        max_tokens=100_000,
        deadline_ms=RECALL_DEADLINE_MS,
    )


def replay(
    turns: Sequence[TurnEvent],
    questions: Sequence[dict[str, Any]],
    *,
    distill: bool,
    capture: Path | None = None,
) -> Replay:
    """Publish ``turns`` in order, asking each question at its ``position`` (turns of its
    workspace published before it); with ``capture``, keep the replayed store and the
    requests there (``bench.retrieval_capture``)."""
    first: dict[str, int] = {}
    for n, turn in enumerate(turns):
        first.setdefault(turn.workspace, n)
    ordered = sorted(questions, key=lambda q: first[q["workspace"]] + q["position"])
    out = Replay()
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(Path(tmp)) as endpoints:
        settings = with_endpoints(Settings(_env_file=None), endpoints)
        clients = build_clients(settings)
        ingest = build_ingest_worker(clients)
        admission = build_admission(clients, clients.redis)
        maintenance = build_maintenance_worker(clients) if distill else None
        distiller = maintenance.distiller if maintenance is not None else None
        recall = build_recall_worker(clients)
        recall.bootstrap()
        server = threading.Thread(target=recall.run, daemon=True)
        server.start()
        client = RecallClient(clients.redis, deadline_ms=RECALL_DEADLINE_MS)
        asked: list[Asked] = []
        recapped: set[str] = set()
        previous_session: dict[str, str] = {}
        try:
            with open_publisher(settings) as publisher:
                published = 0
                for question in ordered:
                    target = first[question["workspace"]] + question["position"]
                    for turn in turns[published:target]:
                        if turn.session_id != question["session_id"]:
                            previous_session[turn.workspace] = turn.session_id
                        publisher.publish(turn)
                    published = max(published, target)
                    if not publisher.flush(timeout_s=60):
                        raise SystemExit("the publisher could not flush")
                    _drain(admission, ingest, maintenance)
                    session = question["session_id"]
                    earlier = previous_session.get(question["workspace"])
                    if distiller is not None and session not in recapped and earlier:
                        recapped.add(session)
                        if recap_session(distiller, earlier, settings.recap_budget_tokens):
                            out.recaps += 1
                    position = _caught_up(clients.redis, settings.changes_stream, recall)
                    for context, into in ((True, out.with_context), (False, out.without_context)):
                        request = _request(question, context)
                        now = datetime.now(UTC)
                        started = time.perf_counter()
                        response = client.send(request)
                        out.timings_ms.append((time.perf_counter() - started) * 1000)
                        into[question["id"]] = _ranked(response)
                        asked.append(
                            Asked(
                                question["id"],
                                context,
                                position,
                                now,
                                request,
                                into[question["id"]],
                            )
                        )
            if capture is not None:
                meta = {"distill": distill, "questions": len(ordered), "recaps": out.recaps}
                write_capture(capture, clients.redis, settings.changes_stream, asked, meta)
            out.memories = len(recall.index)
            for memory in recall.index.snapshot().values():
                out.kinds[memory.kind.value] = out.kinds.get(memory.kind.value, 0) + 1
            semantic = recall.index.semantic
            out.model = semantic.model if semantic is not None else "none"
        finally:
            recall.stop()
            server.join(timeout=10)
            clients.close()
    return out


def _drain(admission: Any, ingest: Any, maintenance: Any) -> None:
    """Admit the inbox and run the workers in burst mode until neither finds work."""
    while True:
        worked = False

        def work() -> None:
            nonlocal worked
            did = ingest.work(burst=True, with_scheduler=False, logging_level="WARNING")
            worked = worked or bool(did)

        admission.burst(work)
        if maintenance is not None:
            did = maintenance.work(burst=True, with_scheduler=False, logging_level="WARNING")
            worked = worked or bool(did)
        if not worked:
            return
