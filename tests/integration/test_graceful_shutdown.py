"""Graceful SIGTERM of the RQ worker processes, real processes on real servers, with a
slow endpoint (the local OpenAI-compatible test server) holding a batch or job in flight:
ingest (which never calls the LLM) is held in its embedding call, maintenance in its LLM
call. Ingest finishes its batch job (a second signal ends it at once and RQ's Retry runs it
again later), maintenance finishes its job; both exit 0. (Recall: test_recall_degradation.py.)"""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

import pytest
import redis

from tests.support.distill import decision_events
from tests.support.fake_openai import FakeOpenAI, Reply, slow_vectors
from tests.support.rq_keys import RQ_QUEUE_PREFIX
from tests.support.turns import turn
from tests.support.worker_processes import start_worker, stop, wait_for, worker_env
from turngraph.app import build_pipeline, ingest_queue
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.producers.distill_client import DistillClient
from turngraph.workers.batch_store import job_turns
from turngraph.workers.extraction.offline import OfflineExtractor

pytestmark = pytest.mark.integration

TURNS = 30

RQ_REPEAT_WINDOW_S = 1.0
"""RQ ignores a second stop signal within this long of the first (``request_force_stop``)."""


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _llm_env(clients: Clients, fake: FakeOpenAI) -> dict[str, str]:
    return worker_env(
        clients,
        TURNGRAPH_LLM_BASE_URL=fake.base_url,
        TURNGRAPH_LLM_API_KEY="test",
        TURNGRAPH_LLM_MODEL="test-model",
        TURNGRAPH_LLM_MAX_RETRIES="0",
        TURNGRAPH_DISTILL_ENABLED="false",
    )


def _embedding_env(clients: Clients, fake: FakeOpenAI) -> dict[str, str]:
    """Ingest embeds each batch through the fake's slow ``/v1/embeddings``."""
    return worker_env(
        clients,
        TURNGRAPH_EMBEDDING_PROVIDER="openai",
        TURNGRAPH_EMBEDDING_BASE_URL=fake.base_url,
        TURNGRAPH_EMBEDDING_API_KEY="test",
        TURNGRAPH_EMBEDDING_MODEL="fake-embed",
        TURNGRAPH_EMBEDDING_TIMEOUT_S="60",
        TURNGRAPH_EMBEDDING_MAX_RETRIES="0",
        TURNGRAPH_DISTILL_ENABLED="false",
    )


def _enqueue(clients: Clients) -> list[str]:
    events = [turn(f"shutdown check {i}: src/s{i}.py", i, session="shutdown") for i in range(TURNS)]
    queue = ingest_queue(clients)
    BoundedQueue(clients.redis, name=queue.name, max_length=1000).enqueue_many(events)
    return [e.event_id for e in events]


def test_sigterm_lets_the_ingest_batch_finish(clients: Clients, fake: FakeOpenAI) -> None:
    fake.add_embeddings(*[slow_vectors(delay_s=3.0) for _ in range(8)])
    ids = _enqueue(clients)
    conn, queue = clients.redis, ingest_queue(clients)
    proc = start_worker("ingest", _embedding_env(clients, fake))
    signalled = False
    try:
        assert wait_for(lambda: fake.embedding_requests, 90), "the batch never embedded"
        assert queue.started_job_registry.count == 1  # a batch is in flight
        proc.send_signal(signal.SIGTERM)
        signalled = True
        started = time.monotonic()
    finally:
        code, output = stop(proc, signalled=signalled)
    assert code == 0, output[-3000:]
    assert time.monotonic() - started < 30
    assert "Traceback" not in output, output[-3000:]
    ingested = [i for i in ids if is_ingested(conn, i)]
    assert ingested, "the batch in flight was not finished"
    waiting = int(conn.llen(f"turngraph:inbox:{queue.name}")) + sum(
        len(job_turns(conn, job)) for job in queue.get_jobs()
    )
    assert len(ingested) + waiting == TURNS  # the rest still waits, nothing lost


def test_a_second_sigterm_hands_the_batch_back(clients: Clients, fake: FakeOpenAI) -> None:
    fake.add_embeddings(*[slow_vectors(delay_s=20.0) for _ in range(8)])
    ids = _enqueue(clients)
    conn, queue = clients.redis, ingest_queue(clients)
    proc = start_worker("ingest", _embedding_env(clients, fake))
    signalled = False
    try:
        assert wait_for(lambda: fake.embedding_requests, 90), "the batch never embedded"
        asked = time.monotonic()  # the embedding answers 20 s after this
        proc.send_signal(signal.SIGTERM)  # warm: would wait for the batch
        signalled = True
        code, output = _stop_cold(proc)
        took = time.monotonic() - asked
    finally:
        fake.stop_hangs()
        if proc.poll() is None:  # a failed check above: never leave the worker running
            stop(proc, signalled=signalled)
    assert took < 15, output[-3000:]  # did not wait for the 20 s embedding answer
    assert not any(is_ingested(conn, i) for i in ids)
    # the batch job in flight failed on the cold stop and waits for its retry; the rest
    # waits in the inbox or RQ's queue: every turn once, nothing lost
    jobs = [*queue.get_jobs(), *queue.scheduled_job_registry.get_job_ids()]
    held = [
        t["event_id"]
        for job in (j if not isinstance(j, str) else queue.fetch_job(j) for j in jobs)
        if job is not None
        for t in job_turns(conn, job)
    ]
    inbox = [json.loads(e)["event_id"] for e in conn.lrange(f"turngraph:inbox:{queue.name}", 0, -1)]
    assert sorted(held + inbox) == sorted(ids), output[-3000:]
    assert queue.scheduled_job_registry.count == 1  # RQ's Retry holds the cold-stopped batch
    assert code == 0, output[-3000:]


def _stop_cold(proc: subprocess.Popen[bytes]) -> tuple[int, str]:
    """Repeat the stop until the worker exits: the repeat is the cold stop. RQ ignores a
    repeat that comes within a second of the stop it handled, and a loaded machine may
    handle the first one late, so a repeat goes each time a wait of just over that second
    ends with the worker still running (its output drained all along; 60 s at most)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            output = proc.communicate(timeout=RQ_REPEAT_WINDOW_S + 0.1)[0]
            return proc.returncode, output.decode(errors="replace")
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                return stop(proc, signalled=True)  # SIGKILL after its own 60 s
            proc.send_signal(signal.SIGTERM)


def test_sigterm_lets_the_maintenance_job_finish(clients: Clients, fake: FakeOpenAI) -> None:
    events = decision_events(session="s_term", workspace="w_term", user="u_term")
    quiet = dataclasses.replace(  # no follow-up jobs: the worker runs only the one we ask
        clients, settings=clients.settings.model_copy(update={"distill_enabled": False})
    )
    build_pipeline(quiet, extractor=OfflineExtractor()).ingest(events)
    conn = clients.redis
    assert conn.llen(RQ_QUEUE_PREFIX + clients.settings.maintenance_queue) == 0
    # Two unreadable slow answers: the job takes ~6 s, then uses the offline summary.
    fake.add(Reply(content="{}", delay_s=3.0), Reply(content="{}", delay_s=3.0))
    proc = start_worker("maintenance", _llm_env(clients, fake))
    replies: list[object] = []
    signalled = False
    waiting = redis.Redis.from_url(str(clients.settings.redis_url), socket_timeout=90)
    try:
        client = DistillClient(waiting, deadline_ms=60_000)
        asking = threading.Thread(target=lambda: replies.append(client.summarize("s_term", 4)))
        asking.start()
        assert wait_for(lambda: fake.requests, 90), "the job never reached the LLM"
        proc.send_signal(signal.SIGTERM)
        signalled = True
        asking.join(timeout=60)
    finally:
        code, output = stop(proc, signalled=signalled)
        waiting.close()
    assert code == 0, output[-3000:]
    assert "Traceback" not in output, output[-3000:]
    assert replies and getattr(replies[0], "success", False), (replies, output[-3000:])
    assert len(fake.requests) == 2  # the job ran to its end after the signal
