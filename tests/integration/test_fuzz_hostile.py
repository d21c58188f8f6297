"""Fuzz: 10,000 hostile events through the Publisher, and 10,000 raw job hashes written
straight into the queue as a buggy non-Python client would. No worker crash, no partial
write (the graph holds exactly the valid turns, each whole), every rejection typed and
naming the field. Hypothesis draws the examples, derandomized (the same on every run).
"""

from __future__ import annotations

import json
import logging
import zlib
from typing import Any

import pydantic
import pytest
import redis

from tests.support.embedding import with_static_model
from tests.support.hostile import (
    EVENT,
    RAW_JOB,
    collect,
    raw_job,
    recombine,
    unique,
)
from tests.support.pipelines import fake_graph_pipeline, ingest_worker, memory_store
from tests.support.rq_keys import RQ_QUEUE_PREFIX
from turngraph.app import build_ingest_worker, ingest_burst
from turngraph.clients import Clients
from turngraph.producers.publisher import Publisher
from turngraph.producers.redaction import redact_and_fit
from turngraph.schemas.turn_event import TurnEvent
from turngraph.settings import Settings
from turngraph.workers.ingest import dead_letters

pytestmark = pytest.mark.integration

N = 4_000
"""Events (first test) and raw jobs (second) per run. The lists are the same on every run;
their first 4,000 already hold every hostile family of the first 10,000 (measured on
both): each turn field with each validation error type, valid and redacted turns (30
families, the rarest twice), and each envelope and turn field a raw job is refused on
(29, the rarest 4 times; the second test checks the envelope's). 10,000 cost 2.5 times
the time for no family more (the raw jobs' RQ bookkeeping dominates, not our code)."""

DRAWN = 1_000
"""Examples Hypothesis draws; recombined field by field into N."""

SECRETISH = ("MATCH (n) DETACH DELETE n", "-----BEGIN PRIVATE KEY-----", "AKIAIOSFODNN7EXAMPLE")
"""Strings the hostile fields carry (tests/support/hostile.py) that no log line may show."""

RAW_SPEC: dict[str, Any] = {"id": "valid", "hash": True, "data": "valid", "fields": {}}

REFUSALS = {"EnvelopeError", "InvalidPayloadError", "PoisonTurnError"}


def _nothing_left(conn: redis.Redis, queue: str) -> None:
    key = RQ_QUEUE_PREFIX + queue
    assert conn.llen(key) == 0
    assert conn.llen(key + ":intermediate") == 0
    assert conn.zcard(f"rq:wip:{queue}") == 0
    assert conn.llen(f"turngraph:inbox:{queue}") == 0


def _no_crash(caplog: pytest.LogCaptureFixture) -> None:
    crashes = [r for r in caplog.records if "unhandled exception" in r.getMessage()]
    assert crashes == []


def test_hostile_events_through_the_publisher(
    clients: Clients, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.ERROR)
    conn, queue = clients.redis, clients.settings.ingest_queue
    valid: dict[str, TurnEvent] = {}
    rejected = 0
    with Publisher(redis=conn, queue_name=queue, max_queue_length=N) as publisher:
        for index, data in enumerate(recombine(collect(EVENT, DRAWN), N)):
            try:
                event = TurnEvent.model_validate(unique(data, index))
            except pydantic.ValidationError as exc:
                rejected += 1
                errors = exc.errors(include_input=False, include_url=False)
                assert errors and all(error["loc"] and error["type"] for error in errors)
                continue
            assert publisher.publish(event)
            valid[event.event_id] = event
        assert publisher.publish(data) is False  # not an event: dropped, counted, no raise
        assert publisher.flush(timeout_s=60)
        stats = publisher.stats()
    assert rejected + len(valid) == N and len(valid) > N // 4 and rejected > N // 4
    assert (stats.failed, stats.enqueued, stats.duplicates) == (0, len(valid), 0)
    ingest_burst(clients, build_ingest_worker(with_static_model(clients)))
    _no_crash(caplog)
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.event_id AS id, e.content AS content, "
        "e.turn_index AS turn_index, e.role AS role, e.session_id AS session_id",
        database_=clients.graph_database,
    )
    assert sorted(r["id"] for r in records) == sorted(valid)  # each once, nothing else
    for record in records:  # whole: every stored field is the (redacted) turn's
        event = redact_and_fit(valid[record["id"]]).event
        assert (record["content"], record["turn_index"], record["role"]) == (
            event.content,
            event.turn_index,
            event.role.value,
        )
        assert record["session_id"] == event.session_id
    assert dead_letters.failed_jobs(conn, queue) == []
    _nothing_left(conn, queue)


def _payload(data: bytes) -> bytes:
    """The turn's JSON inside RQ's ``[function, null, [[turn]], {}]`` job data."""
    if data[:1] != b"[":
        data = zlib.decompress(data)
    return json.dumps(json.loads(data)[2][0][0]).encode()


def _job_of(letter_id: str, jobs: dict[str, Any]) -> str:
    """The job a dead letter is about: a refused job by its id, an invalid turn inside a
    readable batch job by its event id or as ``<job id>:<place>``."""
    if letter_id in jobs:
        return letter_id
    if letter_id.rpartition(":")[0] in jobs:
        return letter_id.rpartition(":")[0]
    for job_id, fields in jobs.items():
        if fields is not None and letter_id.encode() in _decoded(fields["data"]):
            return job_id
    return letter_id


def _decoded(data: bytes) -> bytes:
    try:
        return zlib.decompress(data)
    except zlib.error:
        return data


# 10,000 jobs through a real RQ worker took 87 s of this process's CPU (pyinstrument) and
# as much in Redis, 300 s of wall time at load 25 and 455 s at load 20 with a profiler, so
# pytest's default 300 s (which CI's load ran into) would cut off even the 4,000 here at
# such load; 1200 s still stops a worker that hangs.
@pytest.mark.timeout(1200)
def test_raw_jobs_from_a_buggy_client(
    redis_conn: redis.Redis,
    settings: Settings,
    caplog: pytest.LogCaptureFixture,
    capfd: pytest.CaptureFixture[str],
) -> None:
    caplog.set_level(logging.INFO)
    # RQ's own level too: a test before this one in the same process may have run
    # configure_logging, which holds RQ's loggers at WARNING (its "Worker" lines gone).
    caplog.set_level(logging.INFO, logger="rq.worker")
    queue = settings.ingest_queue
    jobs = [raw_job(spec, i) for i, spec in enumerate(recombine(collect(RAW_JOB, DRAWN), N))]
    first_id, first = raw_job({**RAW_SPEC, "id": "valid"}, 0)  # dequeued first, surely logged
    assert first is not None
    jobs[0] = (first_id, {**first, "description": " ".join(SECRETISH).encode()})
    with redis_conn.pipeline(transaction=False) as pipe:
        for job_id, fields in jobs:
            if fields is not None:
                pipe.hset(f"rq:job:{job_id}", mapping=fields)  # type: ignore[arg-type]
            pipe.rpush(RQ_QUEUE_PREFIX + queue, job_id)
        pipe.execute()
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    worker.work(burst=True, with_scheduler=False)  # returns: never quits on what it reads
    _no_crash(caplog)
    out, err = capfd.readouterr()  # RQ logs through its own stream handler
    logged = "\n".join([out, err, *(record.getMessage() for record in caplog.records)])
    assert "Worker" in logged  # the worker's log was captured
    assert not [text for text in SECRETISH if text in logged]  # forged descriptions
    _nothing_left(redis_conn, queue)
    fields_of = dict(jobs)
    letters = {
        _job_of(job.job_id, fields_of): job for job in dead_letters.failed_jobs(redis_conn, queue)
    }
    episodes = [node.props for node in store.nodes.values() if "Episode" in node.labels]
    ids = [job_id for job_id, _ in jobs]
    # each turn's session id ends with its job's index (tests/support/hostile.py)
    ingested = [ids[int(props["session_id"].rsplit("-", 1)[1])] for props in episodes]
    assert len(set(ingested)) == len(ingested)  # each job's turn once
    # every job either went in or was refused, never both, never neither
    assert set(letters) | set(ingested) == set(ids)
    assert not set(letters) & set(ingested)
    for letter in letters.values():
        assert letter.error in REFUSALS and letter.field and letter.reason, letter
        assert letter.source == "dead_letter"
    assert len(ingested) > N // 10 and len(letters) > N // 10
    refused_on = {field for letter in letters.values() for field in letter.field.split(", ")}
    # a field RQ cannot restore is refused as "job"; one it restores is named
    assert {"origin", "id", "job", "data", "success_callback_name"} <= refused_on
    for job_id, props in zip(ingested, episodes, strict=True):  # a valid turn, whole
        raw = fields_of[job_id]
        assert raw is not None
        turn = TurnEvent.model_validate_json(_payload(raw["data"]))
        assert (props["content"], props["turn_index"]) == (
            redact_and_fit(turn).event.content,
            turn.turn_index,
        )
