"""An ingest worker process keeps ingesting across a Redis restart (RQ alone would quit)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import redis

from tests.support.embedding import STATIC_MODEL_ENV
from tests.support.turns import turn
from turngraph.clients import Clients
from turngraph.embedded import RedisServer
from turngraph.embedded.services import ServiceEndpoints
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested


def _wait_ingested(conn: redis.Redis, event_ids: list[str], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            if all(is_ingested(conn, e) for e in event_ids):
                return True
        except redis.ConnectionError:
            pass
        time.sleep(0.1)  # polling another process's progress
    return False


def test_ingest_worker_survives_a_redis_restart(
    clients: Clients, embedded: ServiceEndpoints, tmp_path: Path
) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    env = {
        **os.environ,
        **embedded.as_env(),
        "TURNGRAPH_REDIS_URL": server.url,
        "TURNGRAPH_LOG_LEVEL": "WARNING",
        **STATIC_MODEL_ENV,
    }
    worker = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "worker", "ingest"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        conn = redis.Redis.from_url(server.url, socket_timeout=2)
        queue = BoundedQueue(conn, max_length=10_000)
        first = [turn(f"busy when Redis goes: src/a{i}.py", i, session="r1") for i in range(3000)]
        queue.enqueue_many(first)
        deadline = time.monotonic() + 60
        while conn.llen(queue.inbox_key) > 2_000 and time.monotonic() < deadline:
            time.sleep(0.01)  # until the worker is in the middle of the backlog
        server.stop()
        server.start()  # same port, same data (append-only file)
        second = [turn(f"after the restart: src/b{i}.py", i, session="r2") for i in range(20)]
        queue.enqueue_many(second)
        ingested = _wait_ingested(conn, [e.event_id for e in first + second], 120)
        alive = worker.poll() is None
    finally:
        worker.send_signal(signal.SIGTERM)
        output = worker.communicate(timeout=30)[0].decode(errors="replace")
        server.stop()
    assert ingested and alive, output[-3000:]
    assert worker.returncode == 0, output[-2000:]
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
    )
    assert records[0]["n"] == 3020
