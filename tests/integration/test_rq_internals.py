"""``workers/rq_adapter.py`` against RQ itself (RQ's key names as the tests forge them, the
scheduler process it forks), and the public RQ behaviour the one ingest path relies on:
``Queue.prepare_data`` + ``enqueue_many`` inside our ``MULTI``, ``Retry``, and a running
job's started-registry entry kept short by ``get_heartbeat_ttl`` so that RQ's own
``StartedJobRegistry.cleanup`` retries the job of a worker that died.

These are the tests ``test_rq_versions.py`` runs again under the lowest and the highest RQ
that ``pyproject.toml`` allows (``TURNGRAPH_RQ_UNDER_TEST`` names the version expected).
Only a Valkey server is started (no graph): they run in a few seconds.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
import rq
from rq import Queue
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer
from rq.version import VERSION

import turngraph.schemas.ontology as ontology
from tests.support.memory_graph import InMemoryGraphStore
from tests.support.rq_keys import (
    RQ_FAILED_PREFIX,
    RQ_JOB_PREFIX,
    RQ_QUEUE_PREFIX,
    RQ_QUEUES_KEY,
)
from tests.support.turn_factory import make_turn
from turngraph.embedded import RedisServer
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.schemas.defaults import INGEST_FUNCTION, RETRIES
from turngraph.workers.batch_store import job_turns
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.ingest.admission import Admission
from turngraph.workers.ingest.batching import HEARTBEAT_TTL_S, IngestWorker
from turngraph.workers.ingest.pipeline import IngestPipeline
from turngraph.workers.rq_adapter import (
    Refusal,
    ScreeningWorker,
    StoppableWorker,
    performing_worker,
    scheduler_process,
)
from turngraph.workers.trusted_jobs import TrustedJob

pytestmark = pytest.mark.integration

QUEUE = "tg-rq-contract"


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    server = RedisServer(Path(tmp_path_factory.mktemp("rq-contract")) / "redis")
    server.start()
    try:
        yield server.url
    finally:
        server.stop()


@pytest.fixture
def conn(redis_url: str) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(redis_url)
    client.flushdb()
    yield client
    client.close()


def _utc(moment: datetime) -> datetime:
    """RQ's dates as aware UTC (older RQ returns naive UTC, newer aware)."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def test_the_rq_under_test_is_the_one_asked_for() -> None:
    """Under ``test_rq_versions.py`` this file must run against the RQ it installed."""
    expected = os.environ.get("TURNGRAPH_RQ_UNDER_TEST")
    if expected is None:
        pytest.skip("run against the project's own RQ (test_rq_versions.py pins others)")
    assert expected == VERSION
    assert Path(rq.__file__).resolve().is_relative_to(Path(os.environ["TURNGRAPH_RQ_TARGET"]))


def test_key_names_are_rqs(conn: redis.Redis) -> None:
    queue = Queue(QUEUE, connection=conn)
    assert queue.key == RQ_QUEUE_PREFIX + QUEUE
    assert Queue.redis_queues_keys == RQ_QUEUES_KEY
    key = Job.key_for("abc")
    assert (key.decode() if isinstance(key, bytes) else key) == RQ_JOB_PREFIX + "abc"
    assert FailedJobRegistry(QUEUE, connection=conn).key == RQ_FAILED_PREFIX + QUEUE


def test_scheduler_process_is_the_one_rq_forked(conn: redis.Redis) -> None:
    rq_queue = Queue(QUEUE, connection=conn)
    worker = StoppableWorker([rq_queue], connection=conn)
    assert scheduler_process(worker) is None
    worker.scheduler = RQScheduler([rq_queue], connection=conn)
    assert scheduler_process(worker) is None  # not started yet
    process = worker.scheduler.start()
    try:
        assert scheduler_process(worker) is process
        assert process.pid and process.exitcode is None
    finally:
        worker.stop_scheduler()
    deadline = time.monotonic() + 30
    while process.exitcode is None and time.monotonic() < deadline:
        process.join(0.5)
    assert process.exitcode is not None


def _memory_store() -> InMemoryGraphStore:
    return InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )


def _ingest_worker(conn: redis.Redis, store: InMemoryGraphStore) -> IngestWorker:
    pipeline = IngestPipeline(
        redis_client=conn,
        store=store,
        extractor=OfflineExtractor(ontology.ONTOLOGY),
        changes_stream="tg-contract-changes",
    )
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    return IngestWorker(
        [rq_queue],
        pipeline=pipeline,
        connection=conn,
        serializer=JSONSerializer,
        job_class=TrustedJob,
    )


def _admission(conn: redis.Redis, batch: int = 10) -> Admission:
    return Admission(conn, Queue(QUEUE, connection=conn, serializer=JSONSerializer), batch=batch)


def test_admission_enqueues_batch_jobs_this_rq_reads_and_runs(conn: redis.Redis) -> None:
    """``prepare_data`` + ``enqueue_many`` on our MULTI write jobs RQ's ``Job.fetch`` reads
    (function, one argument: the stored batch's reference, description, retry policy), and
    the worker runs them."""
    turns = [make_turn(i) for i in range(25)]
    BoundedQueue(conn, name=QUEUE, max_length=100).enqueue_many(turns)
    admission = _admission(conn)
    assert admission.admit_all() == 10
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    (job_id,) = rq_queue.job_ids
    job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
    assert job.func_name == INGEST_FUNCTION and job.get_status() == JobStatus.QUEUED
    assert list(job.args) == [{"turns": 10, "tenant": ""}]
    assert [p["event_id"] for p in job_turns(conn, job)] == [t.event_id for t in turns[:10]]
    assert job.description == "ingest_batch(10 turns)" and job.retries_left == RETRIES
    store = _memory_store()
    admission.burst(lambda: _ingest_worker(conn, store).work(burst=True, with_scheduler=False))
    stored = {n.props["event_id"] for n in store.nodes.values() if "Episode" in n.labels}
    assert stored == {t.event_id for t in turns}
    assert rq_queue.count == 0 and rq_queue.started_job_registry.count == 0
    assert rq_queue.finished_job_registry.count == 3


def test_a_dead_workers_job_is_retried_by_rqs_own_cleanup(conn: redis.Redis) -> None:
    """A running job's started-registry entry lives ``HEARTBEAT_TTL_S`` (not RQ's job
    timeout + 60 s); once it lapses, RQ's ``StartedJobRegistry.cleanup`` hands the job to
    its ``Retry`` (scheduled, one retry used)."""
    BoundedQueue(conn, name=QUEUE, max_length=100).enqueue_many([make_turn(0)])
    _admission(conn).admit_all()
    worker = _ingest_worker(conn, _memory_store())
    rq_queue = worker.queues[0]
    dequeued = worker.dequeue_job_and_maintain_ttl(timeout=1)
    assert dequeued is not None
    job, _ = dequeued
    worker.prepare_execution(job)  # RQ's own bookkeeping of a started job, as its
    worker.prepare_job_execution(job)  # SimpleWorker.execute_job does before performing it
    registry = rq_queue.started_job_registry
    ((_, expires),) = conn.zrange(registry.key, 0, -1, withscores=True)
    assert expires <= time.time() + HEARTBEAT_TTL_S + 1
    worker.maintain_heartbeats(job)  # what the worker's beat thread calls while it runs
    assert registry.count == 1
    registry.cleanup(timestamp=time.time() + HEARTBEAT_TTL_S + 1)  # the worker died
    job = Job.fetch(job.id, connection=conn, serializer=JSONSerializer)
    assert job.get_status() == JobStatus.SCHEDULED and job.retries_left == RETRIES - 1
    assert registry.count == 0


class _Recording(ScreeningWorker):
    """The adapter's screening worker with nothing of ours: what it refuses, recorded."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self.refusals: list[Refusal] = []

    def refused(self, queue: str, refusals: list[Refusal]) -> None:
        self.refusals += refusals


def test_jobs_rq_cannot_read_are_refused_not_a_crash(conn: redis.Redis) -> None:
    """A job hash RQ's dequeue raises on, and an id RQ skips (no job hash), are taken off
    RQ's lists and handed to ``refused``; the worker goes on to the next job."""
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    conn.hset(RQ_JOB_PREFIX + "forged1", mapping={"data": "x", "created_at": "not a date"})
    conn.rpush(RQ_QUEUE_PREFIX + QUEUE, "forged1", "nohash")
    worker = _Recording([rq_queue], connection=conn, serializer=JSONSerializer)
    assert worker.work(burst=True, with_scheduler=False) is False  # no job ran, no crash
    assert sorted(r.job_id for r in worker.refusals) == ["forged1", "nohash"]
    assert rq_queue.count == 0 and rq_queue.intermediate_queue.get_job_ids() == []


def test_a_stop_asked_for_before_rqs_handlers_ends_the_loop(conn: redis.Redis) -> None:
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    worker = StoppableWorker([rq_queue], connection=conn, serializer=JSONSerializer)
    worker.pending_stop = lambda: True
    worker.work(with_scheduler=False)  # not burst: only the stop ends it
    assert worker.stop_requested


def test_a_job_reaches_the_worker_performing_it(conn: redis.Redis) -> None:
    BoundedQueue(conn, name=QUEUE, max_length=100).enqueue_many([make_turn(0)])
    _admission(conn).admit_all()
    store = _memory_store()
    worker = _ingest_worker(conn, store)
    assert performing_worker() is None
    worker.work(burst=True, with_scheduler=False)
    assert any("Episode" in n.labels for n in store.nodes.values())
