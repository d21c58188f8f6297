"""One path from producer to worker: inbox -> admission (RQ batch jobs through
``Queue.enqueue_many``) -> a stock RQ worker that lends each job its pipeline. Real Redis;
the graph is the in-memory store except where the Bolt store is the point."""

from __future__ import annotations

import pytest
import redis
from rq.job import Job
from rq.registry import FinishedJobRegistry
from rq.serializers import JSONSerializer

from tests.support.memory_graph import InMemoryGraphStore
from tests.support.pipelines import (
    admission,
    admit_and_work,
    episodes,
    fake_graph_pipeline,
    ingest_worker,
    memory_store,
)
from tests.support.turns import turn
from turngraph.app import build_ingest_worker, ingest_queue
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.schemas.defaults import INGEST_FUNCTION, RETRIES
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.settings import Settings
from turngraph.workers.graph.store import Batch, WriteReport
from turngraph.workers.ingest import dead_letters

pytestmark = pytest.mark.both_engines


def test_published_turns_reach_the_graph_in_batch_jobs(
    clients: Clients, settings: Settings
) -> None:
    events = [turn(f"step {i}: edit src/mod{i}.py", i) for i in range(30)]
    BoundedQueue(clients.redis, max_length=100).enqueue_many(events)
    admit_and_work(admission(clients.redis, settings, batch=10), build_ingest_worker(clients))
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e)", database_=clients.graph_database
    )
    assert records[0][0] == 30
    assert all(is_ingested(clients.redis, e.event_id) for e in events)
    queue = ingest_queue(clients)
    finished = FinishedJobRegistry(queue=queue).get_job_ids()
    assert queue.count == 0 and len(finished) == 3  # 30 turns, 10 per job
    stats = BoundedQueue(clients.redis, max_length=100).stats()
    assert (stats.published, stats.enqueued, stats.admitted, stats.length) == (30, 30, 30, 0)


def test_batch_jobs_carry_no_chat_text_in_their_description(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    secret_ish = "the launch code is tangerine"
    BoundedQueue(redis_conn, max_length=10).enqueue(turn(secret_ish, 0))
    admitter = admission(redis_conn, settings)
    admitter.admit_all()
    (job_id,) = (
        ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings))
        .queues[0]
        .get_job_ids()
    )
    job = Job.fetch(job_id, connection=redis_conn, serializer=JSONSerializer)
    assert job.description == "ingest_batch(1 turns)" and job.func_name == INGEST_FUNCTION
    assert job.retries_left == RETRIES


def test_batches_go_through_the_pipeline_the_worker_was_given(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    events = [turn(f"step {i}: edit src/mod{i}.py", i) for i in range(25)]
    BoundedQueue(redis_conn, max_length=100).enqueue_many(events)
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings, batch=10), worker)
    assert episodes(store) == {e.event_id for e in events}
    assert all(is_ingested(redis_conn, e.event_id) for e in events)


def test_published_again_after_ingest_counts_as_a_duplicate_exactly(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    events = [turn(f"fix in src/d{i}.py", i) for i in range(5)]
    inbox = BoundedQueue(redis_conn, max_length=100)
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings))
    admitter = admission(redis_conn, settings)
    inbox.enqueue_many(events)
    admit_and_work(admitter, worker)
    inbox.enqueue_many([*events[:3], turn("fix in src/new.py", 9)])
    inbox.enqueue(turn("fix in src/new.py", 9))  # twice in one admission
    admit_and_work(admitter, worker)
    stats = inbox.stats()
    assert (stats.published, stats.duplicates, stats.admitted) == (10, 4, 6)
    assert stats.published == stats.enqueued + stats.dropped_newest + stats.duplicates


def test_an_entry_that_is_not_a_turn_is_rejected_and_the_rest_ingested(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    good = [turn("fix in src/a.py", 0), turn("fix in src/b.py", 1)]
    inbox = BoundedQueue(redis_conn, max_length=100)
    inbox.enqueue(good[0])
    keys, args = inbox.script_call([inbox.prepare(good[1])])
    redis_conn.execute_command(*inbox.call_command(keys, [*args, b'{"content": "no keys"}']))
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings), worker)
    assert episodes(store) == {e.event_id for e in good}
    stats = inbox.stats()
    assert (stats.published, stats.rejected, stats.admitted) == (3, 1, 2)
    assert stats.published == stats.enqueued + stats.rejected


def test_an_invalid_payload_inside_a_batch_job_is_dead_lettered_alone(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    good = [turn(f"fix in src/m{i}.py", i).model_dump(mode="json") for i in range(3)]
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    worker.queues[0].enqueue(
        INGEST_FUNCTION, [good[0], {"event_id": "bad", "content": 1}, *good[1:]]
    )
    worker.work(burst=True, with_scheduler=False)
    assert episodes(store) == {e["event_id"] for e in good}
    (letter,) = dead_letters.failed_jobs(redis_conn, settings.ingest_queue)
    assert letter.job_id == "bad" and "session_id" in letter.field


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


def test_transient_failure_is_retried_by_rq_with_back_off(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    events = [turn(f"retry me: src/retry{i}.py", i) for i in range(3)]
    BoundedQueue(redis_conn, max_length=10).enqueue_many(events)
    down = _GraphDown(entity_labels=memory_store().entity_labels, relation_types=())
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, down))
    admission(redis_conn, settings).admit_all()
    (job_id,) = worker.queues[0].get_job_ids()
    worker.work(burst=True, with_scheduler=False, max_jobs=1)
    job = Job.fetch(job_id, connection=redis_conn, serializer=JSONSerializer)
    assert job.get_status() == "scheduled" and job.retries_left == RETRIES - 1
    assert not any(is_ingested(redis_conn, e.event_id) for e in events)
    assert list(dead_letters.read(redis_conn, settings.ingest_queue)) == []
