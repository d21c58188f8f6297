"""The recall latency a replica observes (``turngraph_recall_seconds``) runs from the
request's pop to its reply stored by Redis, against the real Redis and graph.

A reply goes out with the serving loop's next blocking pop (one round trip per answer),
so the observation is made when that pop returns: it must cover the reply's push and
leave out the pop's wait for the next request. The wait before the pop is the other
histogram's (``turngraph_recall_queued_seconds``)."""

from __future__ import annotations

import dataclasses
import threading
import time
from typing import Any

import pytest
import redis

from tests.support.processes import wait_until
from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.keys import RECALL_REPLY_PREFIX
from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.workers.recall.worker import RecallWorker

pytestmark = pytest.mark.integration

HOLD_S = 0.2
"""How long the test holds a reply's push on its way to Redis (a slow network)."""

IDLE_S = 0.5
"""How long nobody asks between two requests (under the serving loop's 1 s pop)."""


class _Gate:
    """Holds a client's writes that push a recall reply while closed."""

    def __init__(self) -> None:
        self.opened = threading.Event()
        self.opened.set()
        self.holding = threading.Event()
        """Set once a reply's push is being held."""


def _gated(conn: redis.Redis, gate: _Gate) -> redis.Redis:
    """A client of ``conn``'s server whose reply pushes wait while ``gate`` is closed."""
    reply_prefix = RECALL_REPLY_PREFIX.encode()

    class Gated(redis.Connection):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            packed = command if isinstance(command, bytes) else b"".join(command)
            if b"RPUSH" in packed and reply_prefix in packed and not gate.opened.is_set():
                gate.holding.set()
                gate.opened.wait(30)
            super().send_packed_command(command, check_health)

    pool = redis.ConnectionPool(connection_class=Gated, **conn.connection_pool.connection_kwargs)
    return redis.Redis(connection_pool=pool)


def _serving(clients: Clients, observed: list[float]) -> tuple[RecallWorker, threading.Thread]:
    build_pipeline(clients).ingest([turn("We chose allkeys-lru as the eviction policy.", 1)])
    worker = build_recall_worker(clients, latency_observer=observed.append)
    assert worker.bootstrap() >= 1
    serving = threading.Thread(target=worker.run, daemon=True)
    serving.start()
    return worker, serving


def _ask(clients: Clients, answers: list[RecallResponse]) -> threading.Thread:
    client = RecallClient(clients.redis, deadline_ms=30_000)

    def ask() -> None:
        answers.append(
            client.recall("which eviction policy", session_id="s1", workspace="w1", user="u1")
        )

    asking = threading.Thread(target=ask)
    asking.start()
    return asking


def test_the_recall_latency_covers_a_slow_reply_push(clients: Clients) -> None:
    gate = _Gate()
    replica_redis = _gated(clients.redis, gate)
    observed: list[float] = []
    worker, serving = _serving(dataclasses.replace(clients, redis=replica_redis), observed)
    answers: list[RecallResponse] = []
    try:
        gate.opened.clear()
        asking = _ask(clients, answers)
        wait_until(gate.holding.is_set, 30, "the reply's push held")
        held_at = time.perf_counter()
        # Searched and answered, but not in Redis yet: nothing to observe so far.
        assert observed == []
        time.sleep(HOLD_S)  # the slow push itself (a delay, not a wait for an event)
        assert observed == [] and answers == []
        released_at = time.perf_counter()
        gate.opened.set()
        asking.join(timeout=30)
        wait_until(lambda: observed, 10, "the answer's latency observed")
    finally:
        gate.opened.set()
        worker.stop()
        serving.join(timeout=10)
        replica_redis.close()
    assert len(answers) == 1 and answers[0].success
    assert len(observed) == 1 and worker.counters.answered == 1
    # Popped before the push was held, stored after it was let go.
    assert observed[0] >= released_at - held_at


def test_the_recall_latency_leaves_out_the_wait_for_the_next_request(
    clients: Clients,
) -> None:
    observed: list[float] = []
    worker, serving = _serving(clients, observed)
    answers: list[RecallResponse] = []
    try:
        _ask(clients, answers).join(timeout=30)
        answered_at = time.perf_counter()
        # The reply went with the loop's next pop, which now waits for a request.
        wait_until(lambda: _blocked_in(clients.redis, "blmpop"), 10, "the loop waiting")
        time.sleep(IDLE_S)  # nobody asks for a while (a delay, not a wait for an event)
        asked_again_at = time.perf_counter()
        _ask(clients, answers).join(timeout=30)
        wait_until(lambda: len(observed) == 2, 10, "both answers' latencies observed")
    finally:
        worker.stop()
        serving.join(timeout=10)
    assert len(answers) == 2 and all(a.success for a in answers)
    # The first reply's pop returned with the second request (or at its 1 s timeout):
    # the first answer's latency ends at its push, before that wait.
    assert observed[0] < asked_again_at - answered_at


def _blocked_in(conn: redis.Redis, command: str) -> bool:
    clients: Any = conn.client_list()
    return any(c["cmd"] == command and "b" in c["flags"] for c in clients)


def test_the_time_a_request_waited_in_redis_is_observed(clients: Clients) -> None:
    # Requests pushed before any replica serves: the wait from their sent_at_ms to the
    # pop is observed, a request popped past its deadline's too (dropped, never answered).
    sent_ms = int(time.time() * 1000)
    key = RECALL_REPLY_PREFIX + "waited"
    on_time = RecallRequest(
        request_id="waited", reply_to=key, query="eviction", sent_at_ms=sent_ms, deadline_ms=60_000
    )
    late = RecallRequest(
        request_id="late",
        reply_to=RECALL_REPLY_PREFIX + "late",
        query="eviction",
        sent_at_ms=sent_ms - 5_000,
        deadline_ms=1_000,
    )
    clients.redis.rpush(clients.settings.recall_requests_key, late.model_dump_json())
    clients.redis.rpush(clients.settings.recall_requests_key, on_time.model_dump_json())
    queued: list[float] = []
    worker = build_recall_worker(clients, queued_observer=queued.append)
    serving_from = time.time()
    serving = threading.Thread(target=worker.run, daemon=True)
    serving.start()
    try:
        assert clients.redis.blpop([key], timeout=30) is not None
        answered_by = time.time()
    finally:
        worker.stop()
        serving.join(timeout=10)
    assert worker.counters.skipped_late == 1 and worker.counters.answered == 1
    assert len(queued) == 2
    late_wait, on_time_wait = queued
    waited_ms = int(serving_from * 1000) - sent_ms  # at least: in the list until serving began
    assert late_wait >= (waited_ms + 5_000) / 1000
    assert waited_ms / 1000 <= on_time_wait <= answered_by - sent_ms / 1000  # popped before
