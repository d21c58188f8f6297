"""The operator's bounded inbox (``RPUSH`` + ``inbox_count.lua`` in one MULTI) against a
real Valkey: bound, drop policies and exact counters, the same as ``inbox.lua`` (tenants'
and raw callers'); duplicates are found at admission."""

from __future__ import annotations

import itertools
import json

import pytest
import redis
from rq import Queue
from rq.job import JobStatus
from rq.serializers import JSONSerializer

from tests.support.turn_factory import make_turn
from turngraph.producers.bounded_queue import (
    BoundedQueue,
    Outcome,
    ingested_key,
    is_ingested,
    read_stats,
)
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.keys import INBOX_WAKE_TEMPLATE
from turngraph.workers.ingest import dead_letters
from turngraph.workers.ingest.admission import Admission
from turngraph.workers.ingest.dead_letters import DeadLetter

pytestmark = pytest.mark.integration

QUEUE = "tg-test-ingest"


def _inbox(conn: redis.Redis, max_length: int = 100, **kw: object) -> BoundedQueue:
    return BoundedQueue(conn, name=QUEUE, max_length=max_length, **kw)  # type: ignore[arg-type]


def _inbox_ids(conn: redis.Redis, inbox: BoundedQueue) -> list[str]:
    return [json.loads(raw)["event_id"] for raw in conn.lrange(inbox.inbox_key, 0, -1)]


def test_entries_are_the_turns_json_and_nothing_touches_rq(redis_conn: redis.Redis) -> None:
    inbox = _inbox(redis_conn)
    result = inbox.enqueue_many([make_turn(0), make_turn(1, content="x" * 20_000)])
    assert result.outcomes == (Outcome.ENQUEUED, Outcome.ENQUEUED)
    assert _inbox_ids(redis_conn, inbox) == [make_turn(0).event_id, make_turn(1).event_id]
    assert redis_conn.keys("rq:*") == []
    redis_conn.script_flush()  # a restarted Redis lost its script cache: loaded again
    assert inbox.enqueue(make_turn(2)) is Outcome.ENQUEUED
    assert inbox.length() == 3


def test_drop_newest_rejects_at_the_bound_and_counts(redis_conn: redis.Redis) -> None:
    inbox = _inbox(redis_conn, max_length=3)
    result = inbox.enqueue_many([make_turn(i) for i in range(5)])
    assert result.outcomes == (Outcome.ENQUEUED,) * 3 + (Outcome.DROPPED_NEWEST,) * 2
    stats = inbox.stats()
    assert (stats.length, stats.enqueued, stats.dropped_newest, stats.published) == (3, 3, 2, 5)
    assert _inbox_ids(redis_conn, inbox) == [make_turn(i).event_id for i in range(3)]


def test_drop_oldest_evicts_the_head(redis_conn: redis.Redis) -> None:
    inbox = _inbox(redis_conn, max_length=3, policy=DropPolicy.DROP_OLDEST)
    result = inbox.enqueue_many([make_turn(i) for i in range(5)])
    assert result.outcomes == (Outcome.ENQUEUED,) * 5 and result.evicted == 2
    assert _inbox_ids(redis_conn, inbox) == [make_turn(i).event_id for i in (2, 3, 4)]
    stats = inbox.stats()
    assert (stats.accepted, stats.dropped_oldest, stats.published) == (3, 2, 5)
    assert stats.accepted + stats.dropped + stats.duplicates == stats.published


def test_duplicates_are_counted_at_admission_exactly(redis_conn: redis.Redis) -> None:
    inbox = _inbox(redis_conn)
    redis_conn.set(ingested_key(make_turn(7).event_id), b"1")  # what an ingest worker sets
    assert is_ingested(redis_conn, make_turn(7).event_id)
    inbox.enqueue_many([make_turn(1), make_turn(1), make_turn(7)])
    admission = Admission(
        redis_conn, Queue(QUEUE, connection=redis_conn, serializer=JSONSerializer)
    )
    assert admission.admit_all() == 3
    stats = read_stats(redis_conn, QUEUE)
    assert (stats.published, stats.enqueued, stats.duplicates, stats.admitted) == (3, 1, 2, 1)
    assert stats.length == 0 and admission.counters.batches == 1
    assert stats.published == stats.enqueued + stats.dropped_newest + stats.duplicates


def test_a_turn_published_again_while_its_batch_job_waits_is_a_duplicate(
    redis_conn: redis.Redis,
) -> None:
    """Published again while its first copy waits in a live batch job: a duplicate. Once
    that job failed (retries exhausted), or the turn was dead-lettered, it may be
    published again and is admitted."""
    queue = Queue(QUEUE, connection=redis_conn, serializer=JSONSerializer)
    inbox, admission = _inbox(redis_conn), Admission(redis_conn, queue)
    inbox.enqueue_many([make_turn(1), make_turn(2)])
    assert admission.admit_all() == 2
    inbox.enqueue_many([make_turn(1)])
    assert admission.admit_all() == 1
    stats = read_stats(redis_conn, QUEUE)
    assert (stats.published, stats.admitted, stats.duplicates) == (3, 2, 1)
    assert queue.count == 1
    (job,) = queue.get_jobs()
    job.set_status(JobStatus.FAILED)  # what RQ does once its retries are exhausted
    inbox.enqueue_many([make_turn(1)])
    assert admission.admit_all() == 1
    dead_letters.record(  # what the ingest worker does with a poison turn
        redis_conn, QUEUE, [DeadLetter(make_turn(2).event_id, "PoisonTurnError", "turn", "x", 0)]
    )
    inbox.enqueue_many([make_turn(2), make_turn(1)])
    assert admission.admit_all() == 2
    stats = read_stats(redis_conn, QUEUE)
    assert (stats.published, stats.admitted, stats.duplicates) == (6, 4, 2)
    assert stats.published == stats.enqueued + stats.dropped_newest + stats.duplicates


def test_the_operators_entries_never_pass_through_lua(redis_conn: redis.Redis) -> None:
    inbox = _inbox(redis_conn)
    inbox.enqueue_many([make_turn(0)])
    with redis_conn.monitor() as monitor:
        inbox.enqueue_many([make_turn(i) for i in range(1, 4)])
        redis_conn.echo("tg-test-end")
        sent = []
        while (command := monitor.next_command())["command"] != "ECHO tg-test-end":
            name = command["command"].split(" ", 1)[0].upper()
            if command["client_type"] != "lua" and name not in ("HELLO", "CLIENT"):
                sent.append(name)  # (a new connection's handshake left out)
    # the turns' JSON travels in a plain RPUSH; the script gets their count only
    assert sent == ["MULTI", "RPUSH", "EVAL", "EXEC"], sent
    assert len(_inbox_ids(redis_conn, inbox)) == 4


@pytest.mark.parametrize("policy", [DropPolicy.DROP_NEWEST, DropPolicy.DROP_OLDEST])
def test_the_operators_inbox_bounds_and_counts_as_inbox_lua_does(
    redis_conn: redis.Redis, policy: DropPolicy
) -> None:
    """Every (length before, bound, batch) of a small grid: the same entries kept, the
    same outcomes and the same counters through both scripts."""
    turns = itertools.count()
    for before, bound, batch in itertools.product((0, 2, 5, 7), (1, 5), (0, 1, 3, 6)):
        fast = BoundedQueue(redis_conn, name="tg-a", max_length=bound, policy=policy)
        lua = BoundedQueue(redis_conn, name="tg-b", max_length=bound, policy=policy)
        redis_conn.flushdb()
        old = [make_turn(next(turns)) for _ in range(before)]
        for key in (fast.inbox_key, lua.inbox_key):  # an inbox a larger bound filled
            if old:
                redis_conn.rpush(key, *(fast.prepare(t).data for t in old))
        new = [make_turn(next(turns)) for _ in range(batch)]
        got = fast.enqueue_many(new)
        keys, args = lua.script_call([lua.prepare(t) for t in new])
        want = lua.parse_reply(redis_conn.execute_command(*lua.call_command(keys, args)))
        case = (before, bound, batch)
        assert got == want, case
        assert redis_conn.lrange(fast.inbox_key, 0, -1) == redis_conn.lrange(lua.inbox_key, 0, -1)
        assert read_stats(redis_conn, "tg-a") == read_stats(redis_conn, "tg-b"), case
        wakes = [INBOX_WAKE_TEMPLATE.format(queue=q) for q in ("tg-a", "tg-b")]
        assert redis_conn.lrange(wakes[0], 0, -1) == redis_conn.lrange(wakes[1], 0, -1), case
