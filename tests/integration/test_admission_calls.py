"""Admission's Redis commands per batch do not grow with the batch's turns (issue 38)."""

from __future__ import annotations

import pytest
import redis
from rq import Queue
from rq.serializers import JSONSerializer

from tests.support.turn_factory import make_turn
from turngraph.producers.bounded_queue import BoundedQueue, read_stats
from turngraph.workers.ingest.admission import Admission, operator_source

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
