"""A kept replay (``bench/retrieval_capture.py``): the change stream of a real Redis is
written with the questions at the stream position they were asked, and re-running asks
each one against the store as it stood then, not as it ended."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import redis

from bench.retrieval_capture import Asked, rerun, write_capture
from turngraph.schemas.changes import MemoryRecord, MemoryUpsert, StatusChange, encode_change
from turngraph.schemas.recall import RecallRequest

STREAM = "bench:capture:changes"
NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _turn(n: int, text: str) -> MemoryUpsert:
    return MemoryUpsert(
        memory=MemoryRecord(
            id=f"ep_{n}",
            text=text,
            kind="episode",
            scope="session",
            created_at=NOW - timedelta(days=3, minutes=-n),
            source_event_ids=(f"ev_{n}",),
            session_id="s_1",
            workspace="w_1",
            user="u_1",
            turn_index=n,
        )
    )


def _asked(question_id: str, position: str, query: str) -> Asked:
    request = RecallRequest(query=query, workspace="w_1", user="u_1", max_results=10)
    return Asked(question_id, True, position, NOW, request, ranked=["ev_0"])


def test_each_question_sees_the_store_as_it_stood_when_asked(
    redis_conn: redis.Redis, tmp_path: Path
) -> None:
    first = redis_conn.xadd(STREAM, encode_change(_turn(0, "we deploy with fly.io")))
    redis_conn.xadd(STREAM, encode_change(_turn(1, "the rollout to fly.io failed twice")))
    redis_conn.xadd(STREAM, encode_change(StatusChange(memory_id="ep_0", status="Superseded")))
    asked = [
        _asked("late", "9999999999999-0", "fly.io"),  # after everything
        _asked("early", first.decode(), "fly.io"),  # after the first entry only
    ]
    path = tmp_path / "capture.jsonl.gz"

    written = write_capture(path, redis_conn, STREAM, asked, {"distill": True, "recaps": 0})

    assert written == 3
    with gzip.open(path, "rt") as lines:
        kinds = [next(iter(json.loads(line))) for line in lines]
    assert kinds == ["meta", "id", "ask", "id", "id", "ask"]
    run = rerun(path, embedder=None)
    assert run.with_context == {"early": ["ev_0"], "late": ["ev_1"]}  # ep_0 superseded later
    assert run.same_as_replay == 1 and run.meta["distill"] is True
    assert run.memories == 2 and run.kinds == {"episode": 2}
    assert rerun(path, embedder=None, wanted={"late"}).with_context == {"late": ["ev_1"]}
