"""Admission's Redis commands per batch do not grow with the batch's turns (issue 38)."""

from __future__ import annotations

import pytest
import redis
from rq import Queue
from rq.serializers import JSONSerializer

from tests.support.turn_factory import make_turn
from turngraph.producers.bounded_queue import BoundedQueue, read_stats
from turngraph.workers.ingest.admission import Admission, operator_source
from turngraph.workers.tombstones import hold_admission

pytestmark = pytest.mark.integration

QUEUE = "tg-test-ingest"
END = "tg-test-admission-done"


def _commands(conn: redis.Redis, admission: Admission) -> list[str]:
    """The commands one ``admit`` of the operator's inbox sent (not those its scripts ran
    inside Redis), read from ``MONITOR`` up to an ``ECHO`` sent after it."""
    with conn.monitor() as monitor:
        admission.admit(operator_source(QUEUE))
        conn.echo(END)
        sent = []
        while True:
            command = monitor.next_command()
            if command["command"] == f"ECHO {END}":
                return sent
            if command["client_type"] != "lua":
                sent.append(command["command"].split(" ", 1)[0].upper())


def test_admission_sends_the_same_commands_for_1_10_and_100_turns(
    redis_conn: redis.Redis,
) -> None:
    queue = Queue(QUEUE, connection=redis_conn, serializer=JSONSerializer)
    inbox = BoundedQueue(redis_conn, name=QUEUE, max_length=1000)
    admission = Admission(redis_conn, queue, batch=100)
    sent = {}
    start = 0
    for turns in (1, 1, 10, 100):  # the first loads the scripts
        inbox.enqueue_many([make_turn(start + i) for i in range(turns)])
        start += turns
        sent[turns] = _commands(redis_conn, admission)
        queue.empty()  # room for the next batch
    assert read_stats(redis_conn, QUEUE).admitted == 112
    assert sorted(sent[1]) == sorted(sent[10]) == sorted(sent[100]), sent
    assert len(sent[100]) < 30


class _CountingConnection(redis.Connection):
    """A real connection that counts its round trips (one send per command or pipeline)."""

    sent = 0

    def send_packed_command(self, command: object, check_health: bool = True) -> None:
        type(self).sent += 1
        super().send_packed_command(command, check_health)  # type: ignore[arg-type]


def _counting(conn: redis.Redis) -> redis.Redis:
    kwargs = conn.connection_pool.connection_kwargs
    pool = redis.ConnectionPool(connection_class=_CountingConnection, **kwargs)
    return redis.Redis(connection_pool=pool)


def test_a_batch_costs_three_round_trips_and_eight_draining_cost_two(
    redis_conn: redis.Redis,
) -> None:
    conn = _counting(redis_conn)
    queue = Queue(QUEUE, connection=conn, serializer=JSONSerializer)
    inbox = BoundedQueue(redis_conn, name=QUEUE, max_length=1000)
    admission = Admission(conn, queue, batch=10)
    inbox.enqueue_many([make_turn(i) for i in range(10)])
    admission.admit_all()  # loads the scripts and the inbox function
    inbox.enqueue_many([make_turn(i) for i in range(10, 20)])
    queue.empty()

    _CountingConnection.sent = 0
    assert admission.admit(operator_source(QUEUE)) == 10
    # the take (lock, RQ's room, move, read), the markers, the MULTI (job, unlock)
    assert _CountingConnection.sent == 3

    inbox.enqueue_many([make_turn(i) for i in range(20, 340)])
    _CountingConnection.sent = 0
    admission.burst(queue.empty)  # 32 batches
    assert read_stats(redis_conn, QUEUE).admitted == 340
    assert queue.count == 0 and admission.counters.batches == 34
    # a take moves 8 batches (one per admission list) and each MULTI takes the next 8:
    # the first take, then each take's markers and MULTI; per pass over the inboxes (3)
    # the tenants' list (and a take that finds nothing), RQ's queue length between
    # passes; then the burst's own queue.empty: 2 round trips a batch before (64 here)
    assert _CountingConnection.sent <= 1 + 4 * 2 + 1 + 2 * 2 + 2 * 1 + 2, _CountingConnection.sent


def test_admission_leaves_a_source_alone_while_a_forget_holds_its_lock(
    redis_conn: redis.Redis,
) -> None:
    queue = Queue(QUEUE, connection=redis_conn, serializer=JSONSerializer)
    inbox = BoundedQueue(redis_conn, name=QUEUE, max_length=1000)
    admission = Admission(redis_conn, queue, batch=10)
    inbox.enqueue_many([make_turn(i) for i in range(25)])
    source = operator_source(QUEUE)
    with hold_admission(redis_conn, [source.pending]):
        assert admission.admit(source) == 0
        admission.burst(queue.empty)
        assert inbox.length() == 25 and not redis_conn.exists(source.pending)
    admission.burst(queue.empty)
    assert (read_stats(redis_conn, QUEUE).admitted, inbox.length()) == (25, 0)
    assert not redis_conn.exists(source.pending + ":lock")
