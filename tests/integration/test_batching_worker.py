"""The batching ingest worker: claims, finishes, gives back and recovers RQ jobs, and runs
only ingest jobs, through the pipeline it was given. Real Redis; the graph is the
in-memory store except where the Bolt store is the point."""

from __future__ import annotations

import pytest
import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from tests.support.pipelines import episodes, fake_graph_pipeline, ingest_worker, memory_store
from tests.support.turns import turn
from turngraph.app import build_ingest_worker, ingest_queue
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.settings import Settings
from turngraph.workers.graph.memory_store import InMemoryGraphStore
from turngraph.workers.graph.store import Batch, WriteReport
from turngraph.workers.ingest import dead_letters
from turngraph.workers.ingest.batching import claim_key, requeue_expired_claims

pytestmark = pytest.mark.both_engines


def _statuses(conn: redis.Redis, ids: list[str]) -> set[str]:
    jobs = Job.fetch_many(ids, connection=conn, serializer=JSONSerializer)
    return {job.get_status(refresh=False) for job in jobs if job is not None}


def test_one_burst_ingests_a_batch_and_finishes_every_job(clients: Clients) -> None:
    events = [turn(f"step {i}: edit src/mod{i}.py", i) for i in range(30)]
    BoundedQueue(clients.redis, max_length=100).enqueue_many(events)
    worker = build_ingest_worker(clients)
    worker.max_batch = 10
    worker.work(burst=True, with_scheduler=False)
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e)", database_=clients.graph_database
    )
    assert records[0][0] == 30
    assert all(is_ingested(clients.redis, e.event_id) for e in events)
    queue = ingest_queue(clients)
    assert queue.count == 0 and clients.redis.zcard(claim_key(queue)) == 0
    assert _statuses(clients.redis, [e.event_id for e in events]) == {"finished"}


def test_batches_go_through_the_pipeline_the_worker_was_given(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    events = [turn(f"step {i}: edit src/mod{i}.py", i) for i in range(25)]
    BoundedQueue(redis_conn, max_length=100).enqueue_many(events)
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    worker.max_batch = 10
    worker.work(burst=True, with_scheduler=False)
    assert episodes(store) == {e.event_id for e in events}
    assert all(is_ingested(redis_conn, e.event_id) for e in events)
    assert _statuses(redis_conn, [e.event_id for e in events]) == {"finished"}


def test_invalid_claimed_payload_fails_alone(redis_conn: redis.Redis, settings: Settings) -> None:
    good = [turn("fix in src/a.py", 0), turn("fix in src/b.py", 1)]
    queue = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings)).queues[0]
    bounded = BoundedQueue(redis_conn, max_length=100)
    bounded.enqueue(good[0])
    queue.enqueue(
        "turngraph.workers.ingest.job.ingest_turn",
        {"content": "no scope keys"},
        job_id="badpayload",
        description="ingest_turn(badpayload)",
    )
    bounded.enqueue(good[1])
    store = memory_store()
    ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store)).work(
        burst=True, with_scheduler=False
    )
    assert episodes(store) == {e.event_id for e in good}
    (letter,) = dead_letters.failed_jobs(redis_conn, settings.ingest_queue)
    assert letter.job_id == "badpayload" and "session_id" in letter.field


def test_an_invalid_dequeued_payload_fails_for_good_and_its_batch_is_ingested(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings))
    queue = worker.queues[0]
    queue.enqueue("turngraph.workers.ingest.job.ingest_turn", {"content": "x"}, job_id="bad")
    good = [turn(f"fix in src/m{i}.py", i) for i in range(3)]
    BoundedQueue(redis_conn, max_length=100).enqueue_many(good)
    worker.work(burst=True, with_scheduler=False)
    bad = Job.fetch("bad", connection=redis_conn, serializer=JSONSerializer)
    assert bad.get_status() == "failed" and bad.retries_left == 0
    assert all(is_ingested(redis_conn, e.event_id) for e in good)  # given back, then ingested


def test_only_the_ingest_function_runs(redis_conn: redis.Redis, settings: Settings) -> None:
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings))
    queue = worker.queues[0]
    queue.enqueue("os.remove", "/nonexistent-never-called", job_id="foreign")
    worker.work(burst=True, with_scheduler=False)
    job = Job.fetch("foreign", connection=redis_conn, serializer=JSONSerializer)
    assert job.get_status() == "failed"  # refused when dequeued, never performed
    (letter,) = dead_letters.failed_jobs(redis_conn, settings.ingest_queue)
    assert (letter.job_id, letter.field) == ("foreign", "data.function")


class _GraphDown(InMemoryGraphStore):
    def write(self, batch: Batch) -> WriteReport:
        raise BackendUnavailableError("graph server unavailable (test)")


def test_transient_failure_is_retried_by_rq_and_the_batch_given_back(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    events = [turn(f"retry me: src/retry{i}.py", i) for i in range(3)]
    BoundedQueue(redis_conn, max_length=10).enqueue_many(events)
    down = _GraphDown(entity_labels=memory_store().entity_labels, relation_types=())
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, down))
    worker.max_batch = 3
    worker.work(burst=True, with_scheduler=False, max_jobs=1)
    first = Job.fetch(events[0].event_id, connection=redis_conn, serializer=JSONSerializer)
    assert first.get_status() == "scheduled" and first.retries_left == 7  # RQ's back-off
    queue = worker.queues[0]
    assert queue.get_job_ids() == [e.event_id for e in events[1:]]  # given back, in order
    assert redis_conn.zcard(claim_key(queue)) == 0


def test_expired_claims_go_back_to_the_queue_head(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    queue = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings)).queues[0]
    redis_conn.rpush(queue.key, "later")
    redis_conn.zadd(claim_key(queue), {"c1": 10.0, "c2": 20.0, "fresh": 4e9})
    assert requeue_expired_claims(redis_conn, queue, now=100.0) == 2
    assert [i.decode() for i in redis_conn.lrange(queue.key, 0, -1)] == ["c1", "c2", "later"]
    assert redis_conn.zrange(claim_key(queue), 0, -1) == [b"fresh"]
