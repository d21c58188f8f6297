"""Workers run our job functions only: a forged job hash naming anything else is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rq.job import Job
from rq.serializers import JSONSerializer

from tests.support.rq_keys import RQ_JOB_PREFIX
from tests.support.turns import turn
from turngraph.app import (
    build_maintenance_worker,
    ingest_burst,
    ingest_queue,
)
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.schemas.defaults import INGEST_FUNCTION
from turngraph.workers.ingest import dead_letters
from turngraph.workers.trusted_jobs import ALLOWED_FUNCTIONS

pytestmark = pytest.mark.integration


def _forge(clients: Clients, queue_name: str, job_id: str, data: bytes, **extra: str) -> None:
    """What anyone who can write Redis could do: a job hash in RQ's format, by hand."""
    clients.redis.hset(
        RQ_JOB_PREFIX + job_id,
        mapping={
            "status": "queued",
            "data": data,
            "origin": queue_name,
            "description": "x",
            "created_at": "2026-11-21T05:00:00.000000Z",
            "enqueued_at": "2026-11-21T05:00:00.000000Z",
            "timeout": "60",
            "retries_left": "5",
            "retry_intervals": "[1]",
            **extra,
        },
    )
    clients.redis.rpush(f"rq:queue:{queue_name}", job_id)


def _episodes(clients: Clients) -> int:
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e)", database_=clients.graph_database
    )
    return int(records[0][0])


def test_the_producers_function_is_the_allowed_one() -> None:
    assert {INGEST_FUNCTION} == ALLOWED_FUNCTIONS


@pytest.mark.parametrize("kind", ["ingest", "maintenance"])
def test_a_forged_job_naming_os_system_is_refused_and_dead_lettered(
    clients: Clients, tmp_path: Path, kind: str
) -> None:
    marker = tmp_path / "pwned"
    queue_name = clients.settings.ingest_queue
    if kind == "maintenance":
        queue_name = clients.settings.maintenance_queue
    call = json.dumps(["os.system", None, [f"touch {marker}"], {}]).encode()
    _forge(clients, queue_name, "forged1", call)
    # a callback name is never imported either
    good_call = json.dumps([INGEST_FUNCTION, None, [[{"content": "x"}]], {}]).encode()
    _forge(clients, queue_name, "forged2", good_call, failure_callback_name="os.abort")
    events = [turn("edit src/a.py", 0), turn("edit src/b.py", 1)]
    if kind == "ingest":
        BoundedQueue(clients.redis, max_length=100).enqueue_many(events)
    if kind == "ingest":
        ingest_burst(clients)
    else:
        build_maintenance_worker(clients).work(burst=True, with_scheduler=False)
    assert not marker.exists()
    job = Job.fetch("forged1", connection=clients.redis, serializer=JSONSerializer)
    assert job.get_status() == "failed"
    if kind == "ingest":  # refused when read, before RQ performs anything
        letters = {j.job_id: j for j in dead_letters.failed_jobs(clients.redis, queue_name)}
        assert letters["forged1"].field == "data.function"
        assert letters["forged2"].field == "failure_callback_name"
    else:
        assert job.retries_left == 0
        result = job.latest_result()
        assert result is not None and "ForbiddenJobError" in (result.exc_string or "")
        failed = clients.redis.zrange(f"rq:failed:{queue_name}", 0, -1)
        assert b"forged1" in failed and b"forged2" in failed
    if kind == "ingest":
        assert _episodes(clients) == 2  # the good turns around it got in
        assert ingest_queue(clients).count == 0


def test_a_stock_worker_cannot_run_a_maintenance_job(clients: Clients) -> None:
    """Maintenance jobs get their clients from the worker that performs them (no module holds
    them): a stock RQ worker finds none and the job fails with a ConfigurationError."""
    from rq import SimpleWorker

    from turngraph.app import maintenance_queue
    from turngraph.workers.maintenance.jobs import rolling_context_job

    queue = maintenance_queue(clients)
    job = queue.enqueue(rolling_context_job, {"session_id": "s_none"})
    SimpleWorker([queue], connection=clients.redis, serializer=JSONSerializer).work(
        burst=True, with_scheduler=False
    )
    job.refresh()
    result = job.latest_result()
    assert job.is_failed and result is not None
    assert "ConfigurationError" in (result.exc_string or "")
    again = queue.enqueue(rolling_context_job, {"session_id": "s_none"})
    build_maintenance_worker(clients).work(burst=True, with_scheduler=False)
    again.refresh()
    assert again.is_finished and again.return_value() == {"tokens": 0}
