"""``producers/rq_internals.py`` against RQ itself: every piece of RQ's layout we write is
read back by RQ's public API, and a stock RQ worker runs the jobs we write.

These are the tests ``test_rq_versions.py`` runs again under the lowest and the highest RQ
that ``pyproject.toml`` allows (``TURNGRAPH_RQ_UNDER_TEST`` names the version expected).
Only a Valkey server is started (no graph): they run in a few seconds.
"""

from __future__ import annotations

import json
import os
import time
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
import rq
from rq import Queue, Retry, SimpleWorker
from rq.job import Job, JobStatus
from rq.registry import FailedJobRegistry
from rq.scheduler import RQScheduler
from rq.serializers import JSONSerializer
from rq.utils import str_to_date, utcformat
from rq.version import VERSION

import turngraph.schemas.ontology as ontology
from tests.integration.probe_jobs import SEEN_KEY
from tests.support.turn_factory import make_turn
from turngraph.embedded import RedisServer
from turngraph.producers.bounded_queue import BoundedQueue, Outcome
from turngraph.producers.rq_internals import (
    COMPRESS_ABOVE_BYTES,
    RQ_FAILED_PREFIX,
    RQ_JOB_PREFIX,
    RQ_QUEUE_PREFIX,
    RQ_QUEUES_KEY,
    job_data,
    job_description,
    retry_fields,
    rq_timestamp,
    scheduler_process,
)
from turngraph.schemas.defaults import (
    FAILURE_TTL_S,
    JOB_TIMEOUT_S,
    RESULT_TTL_S,
    RETRIES,
    RETRY_INTERVALS_S,
)
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.graph.memory_store import InMemoryGraphStore
from turngraph.workers.ingest import claims, dead_letters
from turngraph.workers.ingest.batching import BatchingIngestWorker
from turngraph.workers.ingest.pipeline import IngestPipeline
from turngraph.workers.stoppable import StoppableWorker

pytestmark = pytest.mark.integration

PROBE = "tests.integration.probe_jobs.record_turn"
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


def test_timestamps_are_rqs() -> None:
    epoch = 1_767_225_600.123456  # 2026-01-01T00:00:00.123456Z
    ours = rq_timestamp(epoch)
    assert ours == utcformat(datetime.fromtimestamp(epoch, UTC))
    assert _utc(str_to_date(ours)) == datetime.fromtimestamp(epoch, UTC)


def test_job_data_is_what_rqs_json_serializer_reads() -> None:
    event = make_turn(0).model_dump(mode="json")
    small = job_data(json.dumps(event).encode(), PROBE)
    assert JSONSerializer.loads(small) == [PROBE, None, [event], {}]
    big_event = make_turn(1, content="x" * COMPRESS_ABOVE_BYTES).model_dump(mode="json")
    big = job_data(json.dumps(big_event).encode(), PROBE)
    assert JSONSerializer.loads(zlib.decompress(big)) == [PROBE, None, [big_event], {}]


def test_retry_fields_are_what_rqs_retry_writes(conn: redis.Redis) -> None:
    Queue("tg-reference", connection=conn, serializer=JSONSerializer).enqueue(
        PROBE, {"x": 1}, job_id="ref", retry=Retry(max=RETRIES, interval=list(RETRY_INTERVALS_S))
    )
    raw = conn.hmget(RQ_JOB_PREFIX + "ref", "retries_left", "retry_intervals")
    retries, intervals = retry_fields()
    assert int(raw[0]) == int(retries) == RETRIES  # type: ignore[arg-type]
    assert json.loads(raw[1]) == json.loads(intervals) == list(RETRY_INTERVALS_S)  # type: ignore[arg-type]


def test_the_job_hashes_we_write_are_read_back_by_job_fetch(conn: redis.Redis) -> None:
    queue = BoundedQueue(conn, name=QUEUE, max_length=10, function=PROBE)
    short, long = make_turn(0), make_turn(1, content="x" * 20_000)
    before = datetime.now(UTC)
    assert queue.enqueue_many([short, long]).outcomes == (Outcome.ENQUEUED, Outcome.ENQUEUED)

    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    assert rq_queue.job_ids == [short.event_id, long.event_id]
    assert conn.sismember(Queue.redis_queues_keys, rq_queue.key)
    for turn in (short, long):
        job = Job.fetch(turn.event_id, connection=conn, serializer=JSONSerializer)
        assert job.get_status() == JobStatus.QUEUED
        assert job.func_name == PROBE and job.instance is None and job.kwargs == {}
        assert list(job.args) == [turn.model_dump(mode="json")]
        assert job.description == job_description(turn.event_id)
        assert job.origin == QUEUE
        assert job.timeout == JOB_TIMEOUT_S
        assert job.result_ttl == RESULT_TTL_S and job.failure_ttl == FAILURE_TTL_S
        assert job.retries_left == RETRIES and job.retry_intervals == list(RETRY_INTERVALS_S)
        assert job.enqueued_at is not None and job.created_at is not None
        assert abs((_utc(job.enqueued_at) - before).total_seconds()) < 60


def test_our_job_hash_has_the_fields_rq_fills(conn: redis.Redis) -> None:
    """RQ also writes empty strings (callbacks, worker, times); we leave them out and RQ
    reads them back the same."""
    Queue("tg-reference", connection=conn, serializer=JSONSerializer).enqueue(
        PROBE,
        {"x": 1},
        job_id="ref",
        description="d",
        result_ttl=RESULT_TTL_S,
        failure_ttl=FAILURE_TTL_S,
        retry=Retry(max=RETRIES, interval=list(RETRY_INTERVALS_S)),
    )
    BoundedQueue(conn, name=QUEUE, max_length=10, function=PROBE).enqueue(make_turn(0))
    ours = conn.hgetall(RQ_JOB_PREFIX + make_turn(0).event_id)
    theirs = conn.hgetall(RQ_JOB_PREFIX + "ref")
    assert set(ours) <= set(theirs)
    assert {field for field, value in theirs.items() if value not in (b"", b"null")} <= set(ours)


def test_a_stock_worker_runs_the_jobs_we_write(conn: redis.Redis) -> None:
    turns = [make_turn(0), make_turn(1, content="y" * 20_000)]
    BoundedQueue(conn, name=QUEUE, max_length=10, function=PROBE).enqueue_many(turns)
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    SimpleWorker([rq_queue], connection=conn, serializer=JSONSerializer).work(burst=True)
    assert [v.decode() for v in conn.lrange(SEEN_KEY, 0, -1)] == [t.event_id for t in turns]
    for turn in turns:
        job = Job.fetch(turn.event_id, connection=conn, serializer=JSONSerializer)
        assert job.get_status() == JobStatus.FINISHED
    assert rq_queue.count == 0


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


def _batching_worker(conn: redis.Redis, store: InMemoryGraphStore) -> BatchingIngestWorker:
    pipeline = IngestPipeline(
        redis_client=conn,
        store=store,
        extractor=OfflineExtractor(ontology.ONTOLOGY),
        changes_stream="tg-contract-changes",
    )
    rq_queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    return BatchingIngestWorker(
        [rq_queue], pipeline=pipeline, max_batch=10, connection=conn, serializer=JSONSerializer
    )


def _memory_store() -> InMemoryGraphStore:
    return InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )


def test_claims_give_back_what_rq_itself_started(conn: redis.Redis) -> None:
    """The claims' scripts flip RQ's job status and remove RQ's own started-registry entry
    (its member format): a job RQ dequeued and started, and two claimed beside it, go back
    to the queue's head as ``queued`` when their worker is gone, and are ingested once."""
    turns = [make_turn(i) for i in range(3)]
    BoundedQueue(conn, name=QUEUE, max_length=100).enqueue_many(turns)
    store = _memory_store()
    worker = _batching_worker(conn, store)
    rq_queue = worker.queues[0]
    dequeued = worker.dequeue_job_and_maintain_ttl(timeout=1)
    assert dequeued is not None
    job, _ = dequeued
    worker.prepare_execution(job)  # RQ's own bookkeeping of a started job, as its
    worker.prepare_job_execution(job)  # SimpleWorker.execute_job does before performing it
    assert rq_queue.started_job_registry.count == 1
    claims.hold(conn, rq_queue, job.id, worker.name)
    assert claims.claim(conn, rq_queue, 9, worker.name) == [t.event_id for t in turns[1:]]
    statuses = Job.fetch_many([t.event_id for t in turns], connection=conn)
    assert [j.get_status() for j in statuses if j is not None] == [JobStatus.STARTED] * 3

    later = time.time() + claims.CLAIM_TTL_S + 1  # the worker stopped renewing: it died
    assert claims.requeue_expired_claims(conn, rq_queue, now=later) == 3
    assert sorted(rq_queue.job_ids) == sorted(t.event_id for t in turns)
    assert rq_queue.started_job_registry.count == 0
    statuses = Job.fetch_many([t.event_id for t in turns], connection=conn)
    assert [j.get_status() for j in statuses if j is not None] == [JobStatus.QUEUED] * 3

    _batching_worker(conn, store).work(burst=True, with_scheduler=False)
    stored = {n.props["event_id"] for n in store.nodes.values() if "Episode" in n.labels}
    assert stored == {t.event_id for t in turns}
    assert conn.llen(rq_queue.intermediate_queue_key) == 0
    assert rq_queue.started_job_registry.count == 0


def test_the_batching_worker_runs_on_this_rq(conn: redis.Redis) -> None:
    """What the ingest worker builds on RQ (dequeue, execute, its registries, the job's
    ``func``) holds on this RQ: a forged id is dead-lettered, the rest ingested in batches
    and finished, nothing left in RQ's started or intermediate lists."""
    turns = [make_turn(i) for i in range(25)]
    BoundedQueue(conn, name=QUEUE, max_length=100).enqueue_many(turns)
    conn.rpush(RQ_QUEUE_PREFIX + QUEUE, "forged-id")  # no job hash
    store = _memory_store()
    worker = _batching_worker(conn, store)
    rq_queue = worker.queues[0]
    worker.work(burst=True, with_scheduler=False)
    stored = {n.props["event_id"] for n in store.nodes.values() if "Episode" in n.labels}
    assert stored == {t.event_id for t in turns}
    jobs = Job.fetch_many([t.event_id for t in turns], connection=conn, serializer=JSONSerializer)
    assert {job.get_status() for job in jobs if job is not None} == {JobStatus.FINISHED}
    assert [letter.job_id for letter in dead_letters.read(conn, QUEUE)] == ["forged-id"]
    assert rq_queue.count == 0
    assert rq_queue.started_job_registry.count == 0
    assert conn.llen(rq_queue.intermediate_queue_key) == 0
