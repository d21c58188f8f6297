"""A batch job references its turns, stored once in Redis (issue 38): admission moves them
inside Redis and never writes them into the job; the worker reads them, dead-letters what is
not a turn, and lets them expire after a run. Killed between its steps, an admitter loses
and duplicates nothing. Real Redis (and real processes for the kill); in-memory graph."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys

import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from tests.support.pipelines import (
    admission,
    admit_and_work,
    episodes,
    fake_graph_pipeline,
    ingest_worker,
    memory_store,
)
from tests.support.turns import turn
from turngraph.producers.bounded_queue import BoundedQueue, read_stats
from turngraph.schemas.defaults import BATCH_TTL_S, RESULT_TTL_S
from turngraph.schemas.keys import (
    ADMISSION_LIST_TEMPLATE,
    ADMISSION_LISTS,
    INBOX_TEMPLATE,
    admission_lists,
)
from turngraph.schemas.turn_event import TurnEvent
from turngraph.settings import Settings
from turngraph.workers.batch_store import batch_key
from turngraph.workers.ingest import dead_letters

pytestmark = pytest.mark.integration

WORDS = "queue worker redis graph episode decision retry backoff session workspace bound "


def _turns(count: int, session: str = "batches") -> list[TurnEvent]:
    return [turn(f"{i}: " + WORDS * 12, i, session=session) for i in range(count)]


def _commandstats(conn: redis.Redis) -> dict[str, int]:
    return {k.removeprefix("cmdstat_"): v["calls"] for k, v in conn.info("commandstats").items()}


def _balanced(conn: redis.Redis, queue: str) -> bool:
    s = read_stats(conn, queue)
    return s.published == s.enqueued + s.dropped_newest + s.duplicates + s.rejected


def test_the_batch_job_references_its_turns_stored_once(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    turns = _turns(100)
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(turns)
    published = redis_conn.lrange(INBOX_TEMPLATE.format(queue=settings.ingest_queue), 0, -1)
    assert sum(map(len, published)) > 100_000  # ~1.2 KB a turn
    redis_conn.config_resetstat()
    assert admission(redis_conn, settings).admit_all() == 100

    (job_id,) = Queue(settings.ingest_queue, connection=redis_conn).job_ids
    job = Job.fetch(job_id, connection=redis_conn, serializer=JSONSerializer)
    assert list(job.args) == [{"turns": 100, "tenant": ""}]
    data = redis_conn.hget(job.key, "data")
    assert data is not None and len(data) < 500  # the turns are not in the job's data
    # stored once, byte for byte as published, moved inside Redis (one RENAME)
    assert redis_conn.lrange(batch_key(job_id), 0, -1) == published
    assert 0 < redis_conn.ttl(batch_key(job_id)) <= BATCH_TTL_S
    calls = _commandstats(redis_conn)
    # inbox -> admission list -> batch: two RENAMEs; the one RPUSH is RQ's queue's
    assert (calls.get("rename"), calls.get("rpush"), calls.get("sort")) == (2, 1, None)
    assert not redis_conn.exists(ADMISSION_LIST_TEMPLATE.format(source=f"operator:{job.origin}"))


def test_the_worker_writes_the_stored_turns_then_lets_them_expire(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    turns = _turns(30)
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(turns)
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admitter = admission(redis_conn, settings, batch=10)
    admitter.admit_all()
    (job_id,) = Queue(settings.ingest_queue, connection=redis_conn).job_ids
    admit_and_work(admitter, worker)
    assert episodes(store) == {t.event_id for t in turns}
    # kept as long as the finished job's hash: a run RQ repeats after a crash finds them
    assert 0 < redis_conn.ttl(batch_key(job_id)) <= RESULT_TTL_S
    assert read_stats(redis_conn, settings.ingest_queue).admitted == 30


def test_entries_that_are_not_turns_are_refused_or_dead_lettered_and_counted(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    inbox = BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000)
    good = _turns(3)
    inbox.enqueue_many(good)  # loads the script
    keys, args = inbox.script_call([])
    hostile = [
        b"not json",  # no event id: refused at admission
        json.dumps({**turn("x", 7, session="batches").model_dump(mode="json"), "x": 1}).encode(),
    ]
    redis_conn.execute_command(*inbox.call_command(keys, [*args, *hostile]))
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings), worker)

    assert episodes(store) == {t.event_id for t in good}
    stats = read_stats(redis_conn, settings.ingest_queue)
    assert (stats.rejected, stats.admitted, stats.dead_lettered) == (1, 4, 1)
    assert _balanced(redis_conn, settings.ingest_queue)
    (letter,) = dead_letters.read(redis_conn, settings.ingest_queue)
    assert letter.job_id == turn("x", 7, session="batches").event_id
    assert (letter.error, letter.field) == ("InvalidPayloadError", "x")


def test_a_batch_whose_stored_turns_are_gone_dead_letters_each_turn(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(_turns(5))
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admitter = admission(redis_conn, settings)
    admitter.admit_all()
    (job_id,) = Queue(settings.ingest_queue, connection=redis_conn).job_ids
    redis_conn.delete(batch_key(job_id))  # what BATCH_TTL_S running out leaves
    admit_and_work(admitter, worker)
    assert episodes(store) == set()
    letters = list(dead_letters.read(redis_conn, settings.ingest_queue))
    assert sorted(letter.job_id for letter in letters) == [f"{job_id}:{i}" for i in range(5)]
    assert {(letter.field, letter.reason) for letter in letters} == {
        ("batch", "stored turns expired")
    }
    assert read_stats(redis_conn, settings.ingest_queue).dead_lettered == 5


_DYING_ADMITTER = """
import os, signal, redis
from rq import Queue
from rq.serializers import JSONSerializer
from turngraph.workers.ingest.admission import Admission

class Dying(Admission):
    def _commit(self, *args, **kwargs):  # the entries are taken, the job not yet written
        os.kill(os.getpid(), signal.SIGKILL)

conn = redis.Redis.from_url(os.environ["TEST_REDIS_URL"])
queue = Queue(os.environ["TEST_QUEUE"], connection=conn, serializer=JSONSerializer)
Dying(conn, queue, batch=10).admit_all()
"""


def test_an_admitter_killed_between_its_steps_loses_and_duplicates_nothing(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    assert settings.redis_url
    turns = _turns(25)
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(turns)
    env = {**os.environ, "TEST_REDIS_URL": settings.redis_url, "TEST_QUEUE": settings.ingest_queue}
    proc = subprocess.run([sys.executable, "-c", _DYING_ADMITTER], env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    pending = ADMISSION_LIST_TEMPLATE.format(source=f"operator:{settings.ingest_queue}")
    assert redis_conn.llen(pending) == 10  # taken, no job written
    assert not Queue(settings.ingest_queue, connection=redis_conn).job_ids
    redis_conn.delete(pending + ":lock")  # the dead admitter's lock, as its TTL would

    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings, batch=10), worker)
    assert episodes(store) == {t.event_id for t in turns}
    stats = read_stats(redis_conn, settings.ingest_queue)
    assert (stats.admitted, stats.duplicates, stats.length) == (25, 0, 0)
    assert _balanced(redis_conn, settings.ingest_queue)
    assert not redis_conn.exists(pending)


_DYING_DRAINER = """
import os, signal, redis
from rq import Queue
from rq.serializers import JSONSerializer
from turngraph.workers.ingest.admission import Admission

class Dying(Admission):
    looked = 0
    def _fresh(self, ids):  # the next batches were taken in the MULTI that wrote the first
        Dying.looked += 1
        if Dying.looked == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        return super()._fresh(ids)

conn = redis.Redis.from_url(os.environ["TEST_REDIS_URL"])
queue = Queue(os.environ["TEST_QUEUE"], connection=conn, serializer=JSONSerializer)
Dying(conn, queue, batch=2).burst(lambda: None)
"""


def test_a_draining_admitter_killed_after_a_chained_take_loses_and_duplicates_nothing(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    assert settings.redis_url
    turns = _turns(25)
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(turns)
    env = {**os.environ, "TEST_REDIS_URL": settings.redis_url, "TEST_QUEUE": settings.ingest_queue}
    proc = subprocess.run([sys.executable, "-c", _DYING_DRAINER], env=env, timeout=120)
    assert proc.returncode == -signal.SIGKILL
    pending = ADMISSION_LIST_TEMPLATE.format(source=f"operator:{settings.ingest_queue}")
    # the first take moved 8 batches of 2 (one per admission list), their MULTI took the
    # remaining 9 turns into 5 lists under the lock
    lengths = [redis_conn.llen(key) for key in admission_lists(pending)]
    assert lengths == [2, 2, 2, 2, 1, 0, 0, 0]
    assert len(Queue(settings.ingest_queue, connection=redis_conn).job_ids) == ADMISSION_LISTS
    assert redis_conn.exists(pending + ":lock")
    redis_conn.delete(pending + ":lock")  # the dead admitter's lock, as its TTL would

    # an admitter that is not draining (one batch a take, RQ's queue full) reads every
    # list left, in a round trip of its own for those beyond the first
    assert admission(redis_conn, settings, batch=10).admit_all() == 9
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings, batch=10), worker)
    assert episodes(store) == {t.event_id for t in turns}
    stats = read_stats(redis_conn, settings.ingest_queue)
    assert (stats.admitted, stats.duplicates, stats.length) == (25, 0, 0)
    assert _balanced(redis_conn, settings.ingest_queue)
    assert not any(redis_conn.exists(key) for key in admission_lists(pending))


def test_a_turn_in_two_batches_of_one_take_is_admitted_once(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    turns = _turns(5)
    again = [*turns, turns[1], turns[3]]  # published twice, the copies in later batches
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(again)
    queue = Queue(settings.ingest_queue, connection=redis_conn, serializer=JSONSerializer)
    taken = admission(redis_conn, settings, batch=2)
    job_ids: list[str] = []
    taken.burst(lambda: (job_ids.extend(queue.job_ids), queue.empty()))
    # one take: [0, 1] [2, 3] [4, 1] [3]; the last two lose their copies
    assert (taken.counters.admitted, taken.counters.duplicates, len(job_ids)) == (5, 2, 3)
    stored = [redis_conn.lrange(batch_key(job_id), 0, -1) for job_id in job_ids]
    assert sorted(json.loads(raw)["event_id"] for raws in stored for raw in raws) == sorted(
        t.event_id for t in turns
    )
    assert _balanced(redis_conn, settings.ingest_queue)


def test_a_later_admission_list_left_alone_is_taken_before_the_inbox(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    # a dead admitter's third list, its first two emptied since (a forget's purge)
    turns = _turns(8)
    pending = ADMISSION_LIST_TEMPLATE.format(source=f"operator:{settings.ingest_queue}")
    redis_conn.rpush(admission_lists(pending)[2], *(t.model_dump_json() for t in turns[:3]))
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=1000).enqueue_many(turns[3:])

    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings, batch=2), worker)
    assert episodes(store) == {t.event_id for t in turns}
    assert not any(redis_conn.exists(key) for key in admission_lists(pending))
