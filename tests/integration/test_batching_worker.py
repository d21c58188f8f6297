"""The batching ingest worker: claims, finishes, gives back and recovers RQ jobs."""

from __future__ import annotations

from rq.job import Job
from rq.serializers import JSONSerializer

from producers.bounded_queue import BoundedQueue, is_ingested
from tests.support.turns import turn
from turngraph.app import build_ingest_worker, build_pipeline, ingest_queue
from turngraph.clients import Clients
from workers import runtime
from workers.ingest.batching import claim_key, requeue_expired_claims


def _episodes(clients: Clients) -> int:
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e)", database_=clients.graph_database
    )
    return int(records[0][0])


def test_one_burst_ingests_a_batch_and_finishes_every_job(clients: Clients) -> None:
    events = [turn(f"step {i}: edit src/mod{i}.py", i) for i in range(30)]
    BoundedQueue(clients.redis, max_length=100).enqueue_many(events)
    runtime.install(build_pipeline(clients))
    try:
        worker = build_ingest_worker(clients)
        worker.max_batch = 10
        worker.work(burst=True, with_scheduler=False)
    finally:
        runtime.install(None)
    assert _episodes(clients) == 30
    assert all(is_ingested(clients.redis, e.event_id) for e in events)
    queue = ingest_queue(clients)
    assert queue.count == 0 and clients.redis.zcard(claim_key(queue)) == 0
    statuses = {
        job.get_status(refresh=False)
        for job in Job.fetch_many(
            [f"{e.event_id}" for e in events],
            connection=clients.redis,
            serializer=JSONSerializer,
        )
        if job is not None
    }
    assert statuses == {"finished"}


def test_invalid_claimed_payload_fails_alone(clients: Clients) -> None:
    good = [turn("fix in src/a.py", 0), turn("fix in src/b.py", 1)]
    queue = ingest_queue(clients)
    bounded = BoundedQueue(clients.redis, max_length=100)
    bounded.enqueue(good[0])
    queue.enqueue(
        "workers.ingest.job.ingest_turn",
        {"content": "no scope keys"},
        job_id="badpayload",
        description="ingest_turn(badpayload)",
    )
    bounded.enqueue(good[1])
    runtime.install(build_pipeline(clients))
    try:
        build_ingest_worker(clients).work(burst=True, with_scheduler=False)
    finally:
        runtime.install(None)
    assert _episodes(clients) == 2
    assert "badpayload" in queue.failed_job_registry.get_job_ids()


def test_expired_claims_go_back_to_the_queue_head(clients: Clients) -> None:
    queue = ingest_queue(clients)
    clients.redis.rpush(queue.key, "later")
    clients.redis.zadd(claim_key(queue), {"c1": 10.0, "c2": 20.0, "fresh": 4e9})
    assert requeue_expired_claims(clients.redis, queue, now=100.0) == 2
    assert [i.decode() for i in clients.redis.lrange(queue.key, 0, -1)] == ["c1", "c2", "later"]
    assert clients.redis.zrange(claim_key(queue), 0, -1) == [b"fresh"]


def test_transient_failure_is_retried_and_permanent_failure_is_not(clients: Clients) -> None:
    event = turn("retry me: src/retry.py", 0)
    BoundedQueue(clients.redis, max_length=10).enqueue(event)
    queue = ingest_queue(clients)
    job = Job.fetch(event.event_id, connection=clients.redis, serializer=JSONSerializer)
    assert job.retries_left == 8 and job.retry_intervals and job.retry_intervals[0] == 1
    runtime.install(None)  # no pipeline: the job fails with a ConfigurationError (permanent)
    build_ingest_worker(clients).work(burst=True, with_scheduler=False)
    job = Job.fetch(event.event_id, connection=clients.redis, serializer=JSONSerializer)
    assert job.get_status() == "failed" and job.retries_left == 0
    assert event.event_id in queue.failed_job_registry.get_job_ids()
