"""Ingest workers survive a Redis loss at any moment, start-up included, and leave no stale
RQ registry entry behind: a Redis of each test's own (SIGKILLed, restarted on its data)
and real worker processes; the session's graph server."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from rq.queue import Queue

from tests.support.embedding import STATIC_MODEL_ENV
from tests.support.turns import turn
from turngraph.clients import Clients
from turngraph.embedded import RedisServer
from turngraph.embedded.services import ServiceEndpoints
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.schemas.defaults import INGEST_QUEUE
from turngraph.schemas.keys import INBOX_TEMPLATE

pytestmark = pytest.mark.integration

INTERMEDIATE_CLEANUP_S = 45.0
"""The ingest worker retries a job stuck in RQ's intermediate list once seen there for
STUCK_S (10 s), at a maintenance (every 5 s); RQ's own clean-up would wait a minute."""

OUTAGE_MARKERS = (
    b"rq_worker_waiting_for_redis",  # our supervisor, between RQ workers
    b"could not connect to Redis instance",  # RQ's own reconnect loop, inside a worker
    b"admission_redis_error",  # the tenants' admission thread
)
"""What a worker logs when it meets the outage, wherever in its start-up it is."""


def _worker(
    embedded: ServiceEndpoints, server: RedisServer, log: Path | None = None
) -> subprocess.Popen[bytes]:
    env = {
        **os.environ,
        **embedded.as_env(),
        "TURNGRAPH_REDIS_URL": server.url,
        "TURNGRAPH_LOG_LEVEL": "WARNING",
        **STATIC_MODEL_ENV,
    }
    with log.open("wb") if log else contextlib.nullcontext() as out:
        return subprocess.Popen(
            [sys.executable, "-m", "turngraph.cli", "worker", "ingest"],
            env=env,
            stdout=out or subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _ingested(conn: redis.Redis, event_ids: list[str], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if all(is_ingested(conn, e) for e in event_ids):
                return True
        except redis.ConnectionError:
            pass
        time.sleep(0.2)  # polling another process's progress
    return False


def _stop(worker: subprocess.Popen[bytes]) -> str:
    worker.send_signal(signal.SIGTERM)
    try:
        output = worker.communicate(timeout=30)[0]
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        output = worker.communicate()[0]
    return (output or b"").decode(errors="replace")


@pytest.mark.parametrize("redis_down_after_s", [0.0, 0.8, 2.0])
def test_a_worker_survives_losing_redis_while_it_starts(
    clients: Clients, embedded: ServiceEndpoints, tmp_path: Path, redis_down_after_s: float
) -> None:
    server = RedisServer(tmp_path / "redis", appendfsync="always")
    if redis_down_after_s:
        server.start()
    log = tmp_path / "worker.log"
    worker = _worker(embedded, server, log)
    try:
        if redis_down_after_s:
            time.sleep(redis_down_after_s)  # into the worker's start-up (imports, admission)
            server.kill()
        deadline = time.monotonic() + 60
        while not any(marker in log.read_bytes() for marker in OUTAGE_MARKERS):
            assert worker.poll() is None, log.read_text(errors="replace")[-3000:]
            assert time.monotonic() < deadline, "the worker never met the outage"
            time.sleep(0.1)  # until the worker, started or starting, waits for Redis
        server.start()  # same port, same data
        conn = redis.Redis.from_url(server.url, socket_timeout=2)
        events = [turn(f"after the outage: src/s{i}.py", i, session="startup") for i in range(5)]
        BoundedQueue(conn, max_length=100).enqueue_many(events)
        ingested = _ingested(conn, [e.event_id for e in events], 60)
        alive = worker.poll() is None
    finally:
        _stop(worker)
        server.stop()
    output = log.read_text(errors="replace")
    assert ingested and alive, output[-3000:]


def test_no_stale_registry_entry_after_redis_is_sigkilled_mid_batch(
    clients: Clients, embedded: ServiceEndpoints, tmp_path: Path
) -> None:
    server = RedisServer(tmp_path / "redis", appendfsync="always")
    server.start()
    worker = _worker(embedded, server)
    try:
        conn = redis.Redis.from_url(server.url, socket_timeout=2)
        queue = Queue(INGEST_QUEUE, connection=conn)
        events = [
            turn(f"busy when Redis dies: src/k{i}.py", i, session="kill") for i in range(2000)
        ]
        BoundedQueue(conn, max_length=10_000).enqueue_many(events)
        deadline = time.monotonic() + 60
        inbox = INBOX_TEMPLATE.format(queue=INGEST_QUEUE)
        while conn.llen(inbox) > 1_500 and time.monotonic() < deadline:
            time.sleep(0.01)  # until the worker is in the middle of the backlog
        server.kill()
        server.start()
        ingested = _ingested(conn, [e.event_id for e in events], 120)

        def backlog() -> dict[str, int]:
            return {
                "queued": conn.llen(queue.key),
                "intermediate": conn.llen(queue.intermediate_queue_key),
                "started": conn.zcard(queue.started_job_registry.key),
                "inbox": conn.llen(inbox),
                "failed": conn.zcard(queue.failed_job_registry.key),
            }

        # A job dequeued (moved to RQ's intermediate list) when Redis died and never
        # started: the worker's maintenance hands it to its Retry after STUCK_S.
        deadline = time.monotonic() + INTERMEDIATE_CLEANUP_S
        while any(backlog().values()) and time.monotonic() < deadline:
            time.sleep(0.5)  # polling RQ's bookkeeping in the worker process
        left = backlog()
        alive = worker.poll() is None
    finally:
        output = _stop(worker)
        server.stop()
    assert ingested and alive, output[-3000:]
    assert left == dict.fromkeys(left, 0), output[-3000:]
