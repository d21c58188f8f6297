"""A slow LLM endpoint never stalls ingest (issues 25 and 36): a server that needs 60 s to
read each prompt (as a CPU-bound llama.cpp did), behind the real ``openai`` client, with the
real Redis, graph server and batching ingest worker: every turn is stored within 10 s of
publishing without a request to the LLM, none is dead-lettered or split off, and the
enrichment pass picks them up, recording each batch, once the endpoint answers."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from rq.timeouts import JobTimeoutException

from tests.support.dev_sessions import dev_sessions
from tests.support.fake_openai import FakeOpenAI, Reply, hang
from turngraph.app import build_distiller, build_ingest_worker, build_pipeline, ingest_burst
from turngraph.clients import Clients, build_clients
from turngraph.producers.bounded_queue import BoundedQueue, read_stats
from turngraph.schemas.keys import REEXTRACT_ATTEMPTS, REEXTRACT_PENDING, REEXTRACT_STATS
from turngraph.settings import Settings
from turngraph.workers.ingest import dead_letters
from turngraph.workers.ingest.isolation import run_isolating
from turngraph.workers.maintenance import reextract

pytestmark = pytest.mark.integration

READ_S = 60.0
"""What the server takes to read any prompt."""


@pytest.fixture
def slow_server() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(read_s=READ_S) as server:
        yield server


def _configured(settings: Settings, base_url: str, **update: object) -> Settings:
    return settings.model_copy(
        update={
            "llm_base_url": base_url,
            "llm_api_key": SecretStr("k"),
            **update,
        }
    )


def _episodes(clients: Clients) -> int:
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
    )
    return int(records[0]["n"])


def test_forty_turns_are_stored_within_seconds_while_the_llm_reads(
    slow_server: FakeOpenAI, clients: Clients, settings: Settings
) -> None:
    turns = dev_sessions()
    configured = _configured(settings, slow_server.base_url)
    with_llm = build_clients(configured)
    try:
        pipeline = build_pipeline(with_llm)
        queue = BoundedQueue(with_llm.redis, name=configured.ingest_queue, max_length=1_000)
        published = time.monotonic()
        queue.enqueue_many(turns)
        ingest_burst(with_llm, build_ingest_worker(with_llm, pipeline))
        stored_s = time.monotonic() - published
    finally:
        with_llm.close()
    assert _episodes(clients) == 40
    assert stored_s < 10.0, stored_s
    assert list(dead_letters.read(clients.redis, configured.ingest_queue)) == []
    assert read_stats(clients.redis, configured.ingest_queue).dead_lettered == 0
    assert clients.redis.zcard(REEXTRACT_PENDING) == 40  # enrichment later
    assert slow_server.requests == []  # ingest never waits for the LLM (issue 36)


def test_rq_job_timeout_is_transient_and_never_splits_a_batch() -> None:
    """RQ's timer fires once: a batch split after it would run on without a deadline,
    and a one-turn piece would be dead-lettered as poison (issue 25)."""
    calls: list[int] = []

    def run(items: object) -> None:
        calls.append(len(items))  # type: ignore[arg-type]
        raise JobTimeoutException("Task exceeded maximum timeout value (120 seconds)")

    with pytest.raises(JobTimeoutException):
        run_isolating(run, list(range(5)))
    assert calls == [5]


def test_reextraction_records_each_batch_and_resumes(clients: Clients, settings: Settings) -> None:
    """A run whose budget runs out keeps what it did; the next run resumes (issue 25: a
    run recorded its results only at the end and stayed at 45 pending / 0 done)."""
    turns = dev_sessions("rx")
    with FakeOpenAI() as server:
        configured = _configured(
            settings,
            server.base_url,
            llm_batch_max_turns=10,
            llm_max_retries=0,
            llm_reextract_budget_s=6.0,
        )
        with_llm = build_clients(configured)
        try:
            build_pipeline(with_llm).ingest(turns)  # the offline rules; enrichment later
            assert clients.redis.zcard(REEXTRACT_PENDING) == 40
            distiller = build_distiller(with_llm)
            assert distiller.reextractor is not None
            # two batches answered, then a request that outlasts the run's budget
            server.add(Reply(echo=True), Reply(echo=True), hang())
            server.echo = True
            first = reextract.reextract_pending(distiller, distiller.reextractor)
            assert (first.succeeded, first.failed, first.pending) == (20, 10, 20)
            second = reextract.reextract_pending(distiller, distiller.reextractor)
        finally:
            with_llm.close()
    assert (second.succeeded, second.pending) == (20, 0)
    stats = {k.decode(): int(v) for k, v in clients.redis.hgetall(REEXTRACT_STATS).items()}
    assert (stats["succeeded"], stats["runs"]) == (40, 2)


def test_turns_a_model_cannot_answer_are_given_up_after_three_answers(
    clients: Clients, settings: Settings
) -> None:
    """A small model that answers every re-extraction with a cut-off answer: the turns
    keep their offline entities and leave the pending set (issue 25: pending never
    reached 0), while an endpoint that is down never gives a turn up."""
    turns = dev_sessions("gu")[:4]
    cut = Reply(content='{"turns": [{"event_id": "', finish_reason="length")
    with FakeOpenAI() as server:
        configured = _configured(settings, server.base_url, llm_max_retries=0)
        with_llm = build_clients(configured)
        try:
            build_pipeline(with_llm).ingest(turns)  # the offline rules; enrichment later
            distiller = build_distiller(with_llm)
            assert distiller.reextractor is not None
            down = reextract.reextract_pending(distiller, distiller.reextractor)  # 500 again
            assert (down.failed, down.given_up, down.pending) == (4, 0, 4)
            runs = []
            for _ in range(3):
                server.add(*[cut] * 8)
                runs.append(reextract.reextract_pending(distiller, distiller.reextractor))
        finally:
            with_llm.close()
    assert [r.given_up for r in runs] == [0, 0, 4] and runs[-1].pending == 0
    assert clients.redis.hlen(REEXTRACT_ATTEMPTS) == 0
    assert _episodes(clients) == 4
