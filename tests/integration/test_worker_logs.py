"""A worker's log stream stays JSON lines: RQ's and the driver's records included."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.rq_keys import RQ_JOB_PREFIX
from tests.support.turns import turn
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue

pytestmark = pytest.mark.integration


def _worker_env(clients: Clients, data_dir: Path) -> dict[str, str]:
    settings = clients.settings
    assert settings.redis_url and settings.graph_uri
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri,
        "TURNGRAPH_GRAPH_USER": settings.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
        "TURNGRAPH_DATA_DIR": str(data_dir),
        "TURNGRAPH_LOG_FORMAT": "json",
        "TURNGRAPH_LOG_LEVEL": "INFO",
        "TURNGRAPH_EMBEDDING_PROVIDER": "none",
    }
    if settings.graph_database:
        env["TURNGRAPH_GRAPH_DATABASE"] = settings.graph_database
    return env


def _run_burst(kind: str, env: dict[str, str]) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "turngraph", "worker", kind, "--burst"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


def test_every_line_a_worker_prints_is_json_rq_records_included(
    clients: Clients, tmp_path: Path
) -> None:
    queue = clients.settings.maintenance_queue
    # A job RQ itself fails (a function not on the allow-list): RQ logs the failure.
    clients.redis.hset(
        RQ_JOB_PREFIX + "forged1",
        mapping={
            "status": "queued",
            "data": json.dumps(["os.getcwd", None, [], {}]),
            "origin": queue,
            "description": "forged",
            "created_at": "2026-11-21T05:00:00.000000Z",
            "enqueued_at": "2026-11-21T05:00:00.000000Z",
            "timeout": "60",
        },
    )
    clients.redis.rpush(f"rq:queue:{queue}", "forged1")
    BoundedQueue(clients.redis, max_length=100).enqueue_many([turn("edit src/a.py", 0)])
    env = _worker_env(clients, tmp_path / "data")

    lines = _run_burst("maintenance", env) + _run_burst("ingest", env)

    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except json.JSONDecodeError:
            pytest.fail(f"a line of the worker's log stream is not JSON: {line[:200]}")
    rq_records = [r for r in records if str(r.get("logger", "")).startswith("rq")]
    assert rq_records, "RQ's own records (the refused job) reach the stream, as JSON"
    # RQ's INFO chatter stays out: the application, not RQ's import, sets its level.
    assert {r["level"] for r in rq_records} <= {"warning", "error", "critical"}
    assert all("event" in r and "level" in r and "timestamp" in r for r in records)
