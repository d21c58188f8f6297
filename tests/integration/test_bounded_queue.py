"""The Lua bounded enqueue against a real Valkey, executed by a stock RQ SimpleWorker."""

from __future__ import annotations

import json
import zlib

import pytest
import redis
from rq import Queue, Retry, SimpleWorker
from rq.job import Job, JobStatus
from rq.serializers import JSONSerializer

from tests.integration.probe_jobs import SEEN_KEY
from tests.support.turn_factory import make_turn
from turngraph.producers.bounded_queue import (
    BoundedQueue,
    Outcome,
    ingested_key,
    is_ingested,
    read_stats,
)
from turngraph.schemas.defaults import RETRIES, RETRY_INTERVALS_S, DropPolicy

pytestmark = pytest.mark.integration

PROBE = "tests.integration.probe_jobs.record_turn"
QUEUE = "tg-test-ingest"


def _queue(conn: redis.Redis, max_length: int = 100, **kw: object) -> BoundedQueue:
    return BoundedQueue(conn, name=QUEUE, max_length=max_length, function=PROBE, **kw)  # type: ignore[arg-type]


def _work(conn: redis.Redis) -> None:
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    SimpleWorker([rq_queue], connection=conn, serializer=JSONSerializer).work(burst=True)


def test_stock_simple_worker_runs_the_jobs_the_script_wrote(redis_conn: redis.Redis) -> None:
    queue = _queue(redis_conn)
    long_turn = make_turn(1, content="x" * 20_000)  # compressed like RQ does
    result = queue.enqueue_many([make_turn(0), long_turn])
    assert result.outcomes == (Outcome.ENQUEUED, Outcome.ENQUEUED)
    assert redis_conn.sismember("rq:queues", f"rq:queue:{QUEUE}")

    raw = redis_conn.hget(f"rq:job:{long_turn.event_id}", "data")
    assert raw is not None and zlib.decompress(raw).startswith(b'["' + PROBE.encode())
    job = Job.fetch(make_turn(0).event_id, connection=redis_conn, serializer=JSONSerializer)
    assert job.get_status() == JobStatus.QUEUED
    assert job.description == f"ingest_turn({make_turn(0).event_id})"
    assert job.origin == QUEUE and job.timeout == 120 and job.enqueued_at is not None
    assert list(job.args) == [make_turn(0).model_dump(mode="json")]

    _work(redis_conn)

    seen = [v.decode() for v in redis_conn.lrange(SEEN_KEY, 0, -1)]
    assert seen == [make_turn(0).event_id, long_turn.event_id]
    assert job.get_status(refresh=True) == JobStatus.FINISHED
    assert queue.length() == 0


def test_job_hash_has_every_field_rq_itself_fills(redis_conn: redis.Redis) -> None:
    """RQ also writes eight empty strings (callbacks, worker, times); we leave them out
    (they cost a third of Redis's time per enqueue) and RQ reads them back the same."""
    rq_queue = Queue("tg-reference", connection=redis_conn, serializer=JSONSerializer)
    rq_queue.enqueue(
        PROBE,
        {"x": 1},
        job_id="ref",
        description="d",
        result_ttl=600,
        failure_ttl=60,
        retry=Retry(max=RETRIES, interval=list(RETRY_INTERVALS_S)),
    )
    _queue(redis_conn).enqueue(make_turn(0))
    ours = redis_conn.hgetall(f"rq:job:{make_turn(0).event_id}")
    theirs = redis_conn.hgetall("rq:job:ref")
    assert set(ours) == {field for field, value in theirs.items() if value != b""}
    assert ours[b"status"] == b"queued"
    restored = Job.fetch(make_turn(0).event_id, connection=redis_conn, serializer=JSONSerializer)
    reference = Job.fetch("ref", connection=redis_conn, serializer=JSONSerializer)
    for attribute in (
        "started_at",
        "ended_at",
        "last_heartbeat",
        "worker_name",
        "group_id",
    ):
        assert getattr(restored, attribute) == getattr(reference, attribute), attribute
    for callback in ("success_callback", "failure_callback", "stopped_callback"):
        assert getattr(restored, callback) is None
    assert ours[b"retries_left"] == theirs[b"retries_left"]
    assert json.loads(ours[b"retry_intervals"]) == json.loads(theirs[b"retry_intervals"])


def test_drop_newest_rejects_at_the_bound_and_counts(redis_conn: redis.Redis) -> None:
    queue = _queue(redis_conn, max_length=3)
    result = queue.enqueue_many([make_turn(i) for i in range(5)])
    assert result.outcomes == (Outcome.ENQUEUED,) * 3 + (Outcome.DROPPED_NEWEST,) * 2
    stats = queue.stats()
    assert (stats.length, stats.enqueued, stats.dropped_newest, stats.published) == (3, 3, 2, 5)
    ids = [v.decode() for v in redis_conn.lrange(queue.queue_key, 0, -1)]
    assert ids == [make_turn(i).event_id for i in range(3)]
    assert not redis_conn.exists(f"rq:job:{make_turn(4).event_id}")


def test_drop_oldest_evicts_the_head_and_deletes_its_hash(redis_conn: redis.Redis) -> None:
    queue = _queue(redis_conn, max_length=3, policy=DropPolicy.DROP_OLDEST)
    result = queue.enqueue_many([make_turn(i) for i in range(5)])
    assert result.outcomes == (Outcome.ENQUEUED,) * 5 and result.evicted == 2
    ids = [v.decode() for v in redis_conn.lrange(queue.queue_key, 0, -1)]
    assert ids == [make_turn(i).event_id for i in (2, 3, 4)]
    assert not redis_conn.exists(f"rq:job:{make_turn(0).event_id}")
    stats = queue.stats()
    assert (stats.accepted, stats.dropped_oldest, stats.published) == (3, 2, 5)
    assert stats.accepted + stats.dropped + stats.duplicates == stats.published


def test_duplicates_queued_or_ingested_are_counted_not_enqueued(redis_conn: redis.Redis) -> None:
    queue = _queue(redis_conn)
    redis_conn.set(ingested_key(make_turn(7).event_id), b"1")  # what an ingest worker sets
    assert is_ingested(redis_conn, make_turn(7).event_id)
    result = queue.enqueue_many([make_turn(1), make_turn(1), make_turn(7)])
    assert result.outcomes == (Outcome.ENQUEUED, Outcome.DUPLICATE, Outcome.DUPLICATE)
    assert queue.enqueue(make_turn(1)) is Outcome.DUPLICATE
    stats = read_stats(redis_conn, QUEUE)
    assert (stats.enqueued, stats.duplicates, stats.published, stats.length) == (1, 3, 4, 1)


def test_a_failed_job_can_be_published_again(redis_conn: redis.Redis) -> None:
    queue = _queue(redis_conn)
    turn = make_turn(3)
    queue.enqueue(turn)
    redis_conn.hset(f"rq:job:{turn.event_id}", "status", "failed")
    redis_conn.lpop(queue.queue_key)
    redis_conn.zadd(f"rq:failed:{QUEUE}", {turn.event_id: 1})
    assert queue.enqueue(turn) is Outcome.ENQUEUED
    assert not redis_conn.zscore(f"rq:failed:{QUEUE}", turn.event_id)
    _work(redis_conn)
    assert redis_conn.lrange(SEEN_KEY, 0, -1) == [turn.event_id.encode()]
