"""Recovery in seconds: a SIGKILLed worker's batch job is run again by a live worker within
~30 s (its started-registry entry, renewed every few seconds while it ran, lapses and RQ's
own clean-up hands it to its Retry), and so is one dequeued just as Redis died (the ingest
worker's own pass over RQ's intermediate list); a SIGTERMed worker finishes and exits
cleanly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
from rq import Worker

from tests.support.embedding import STATIC_MODEL_ENV
from tests.support.turns import turn
from turngraph.app import ingest_queue
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.workers.ingest.admission import Admission
from turngraph.workers.ingest.batching import HEARTBEAT_TTL_S
from turngraph.workers.rq_adapter import STUCK_S

pytestmark = pytest.mark.integration

RECOVERY_BUDGET_S = 30.0


def _env(clients: Clients) -> dict[str, str]:
    s = clients.settings
    return {
        **os.environ,
        "TURNGRAPH_REDIS_URL": str(s.redis_url),
        "TURNGRAPH_GRAPH_URI": str(s.graph_uri),
        "TURNGRAPH_GRAPH_USER": s.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": s.graph_password.get_secret_value(),
        "TURNGRAPH_GRAPH_DATABASE": str(s.graph_database or ""),
        "TURNGRAPH_DATA_DIR": str(s.data_dir),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
        **STATIC_MODEL_ENV,
    }


def _wait(condition: object, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():  # type: ignore[operator]
            return True
        time.sleep(0.1)  # polling other processes' progress
    return False


def test_a_killed_workers_batch_is_ingested_by_a_live_worker_within_seconds(
    clients: Clients,
) -> None:
    conn = clients.redis
    queue = ingest_queue(clients)
    events = [turn(f"recover me: src/r{i}.py", i, session="recovery") for i in range(40)]
    BoundedQueue(conn, name=queue.name, max_length=1000).enqueue_many(events)
    env = _env(clients)
    stuck = subprocess.Popen(
        [sys.executable, "-m", "tests.support.stuck_worker"], env=env, stderr=subprocess.PIPE
    )
    try:
        started = queue.started_job_registry
        assert _wait(lambda: started.count == 1 and queue.count == 0, 60), "no batch started"
        stuck.send_signal(signal.SIGKILL)
        stuck.wait(timeout=10)
        killed_at = time.monotonic()
        live = subprocess.Popen(
            [sys.executable, "-m", "turngraph.cli", "worker", "ingest"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        try:
            recovered = _wait(
                lambda: all(is_ingested(conn, e.event_id) for e in events), RECOVERY_BUDGET_S + 30
            )
            took = time.monotonic() - killed_at
        finally:
            live.send_signal(signal.SIGTERM)  # graceful: finishes, hands back, exits 0
            output = live.communicate(timeout=60)[0].decode(errors="replace")
    finally:
        if stuck.poll() is None:
            stuck.kill()
            stuck.wait()
    assert recovered, output[-3000:]
    print(f"recovered {len(events)} turns {took:.1f} s after the SIGKILL")
    assert took <= RECOVERY_BUDGET_S, f"recovered after {took:.1f} s"
    assert took >= HEARTBEAT_TTL_S - 1  # it was the heartbeat expiry, not luck
    assert live.returncode == 0, output[-2000:]
    assert queue.count == 0
    assert conn.zcard(queue.started_job_registry.key) == 0
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
    )
    assert records[0]["n"] == 40


def test_a_batch_dequeued_as_redis_died_is_ingested_within_seconds(clients: Clients) -> None:
    """A worker that moved a batch job into RQ's intermediate list (its dequeue) and lost
    Redis before starting it leaves the job there, in no registry: RQ's own clean-up
    retries it a minute later, ours after STUCK_S."""
    conn = clients.redis
    queue = ingest_queue(clients)
    events = [turn(f"dequeued, never started: src/d{i}.py", i, session="stuck") for i in range(20)]
    BoundedQueue(conn, name=queue.name, max_length=1000).enqueue_many(events)
    Admission(conn, queue).admit_all()
    assert queue.count == 1
    # what RQ's dequeue does (BLMOVE to the intermediate list), then nothing more
    conn.lmove(queue.key, queue.intermediate_queue_key, "LEFT", "RIGHT")
    assert queue.count == 0 and conn.llen(queue.intermediate_queue_key) == 1
    live = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "worker", "ingest"],
        env=_env(clients),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert _wait(lambda: Worker.count(queue=queue) == 1, 90), "the worker never started"
        started_at = time.monotonic()  # RQ's worker registered: its first maintenance pass
        recovered = _wait(lambda: all(is_ingested(conn, e.event_id) for e in events), 90)
        took = time.monotonic() - started_at
    finally:
        live.send_signal(signal.SIGTERM)
        output = live.communicate(timeout=60)[0].decode(errors="replace")
    assert recovered, output[-3000:]
    print(f"recovered {len(events)} turns {took:.1f} s after the worker registered")
    assert "ingest_stuck_job_retried" in output, output[-3000:]
    assert took <= RECOVERY_BUDGET_S, f"recovered after {took:.1f} s"
    assert took >= STUCK_S  # it waited for a live worker's window, not less
    assert conn.llen(queue.intermediate_queue_key) == 0
    assert conn.zcard(queue.failed_job_registry.key) == 0
