"""The LLM re-extraction pass: turns the offline rules stood in for are asked again once
the endpoint answers, through the real ``openai`` client against the local fake endpoint,
the real Redis and the real graph server; run as the maintenance queue runs it."""

from __future__ import annotations

import argparse
import json
from collections.abc import Iterator

import pytest
from pydantic import SecretStr

from tests.integration.test_llm_extractor import E1, E2, TURNS, ent
from tests.support.fake_openai import FakeOpenAI, answer, error
from turngraph.app import build_distiller, build_pipeline
from turngraph.cli.queue_cmd import run_queue_status
from turngraph.clients import Clients, build_clients
from turngraph.schemas.changes import MemoryUpsert, decode_change
from turngraph.schemas.keys import REEXTRACT_PENDING, REEXTRACT_STATS
from turngraph.settings import Settings
from turngraph.workers.maintenance import jobs
from turngraph.workers.trusted_jobs import MAINTENANCE_FUNCTIONS

pytestmark = pytest.mark.integration

CONCEPT = ent("Concept", "at-least-once delivery")
"""Something only the LLM finds: the re-extraction must add it to the graph."""


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


@pytest.fixture
def with_llm(fake: FakeOpenAI, clients: Clients, settings: Settings) -> Iterator[Clients]:
    configured = settings.model_copy(
        update={
            "llm_base_url": fake.base_url,
            "llm_api_key": SecretStr("k"),
            "llm_max_retries": 0,
        }
    )
    built = build_clients(configured)
    yield built
    built.close()


def names(clients: Clients, label: str) -> list[str]:
    records, _, _ = clients.graph.execute_query(
        f"MATCH (:Episode)-[:MENTIONS]->(n:{label}) RETURN DISTINCT n.name AS name",
        database_=clients.graph_database,
    )
    return sorted(r["name"] for r in records)


def queue_status(
    clients: Clients, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> dict[str, int]:
    monkeypatch.setenv("TURNGRAPH_REDIS_URL", str(clients.settings.redis_url))
    capsys.readouterr()
    assert run_queue_status(argparse.Namespace(json=True)) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_pending_turns_get_the_llms_entities_once_the_endpoint_answers(
    fake: FakeOpenAI,
    with_llm: Clients,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert "turngraph.workers.maintenance.jobs.reextract_job" in MAINTENANCE_FUNCTIONS
    result = build_pipeline(with_llm).ingest(TURNS)  # the offline rules; no LLM call
    assert (result.turns, result.reextract) == (2, 2)
    assert fake.requests == []
    assert names(with_llm, "Concept") == []
    assert names(with_llm, "Service") == ["Redis", "Valkey"]  # offline entities

    fake.add(error(500))  # first run: still failing; the turns stay pending
    distiller = build_distiller(with_llm)
    assert jobs.reextract_job(reschedule=False, distiller=distiller) == {
        "succeeded": 0,
        "failed": 2,
        "missing": 0,
        "given_up": 0,
        "entities": 0,
        "pending": 2,
    }
    assert with_llm.redis.zcard(REEXTRACT_PENDING) == 2

    with_llm.redis.zadd(REEXTRACT_PENDING, {"forgotten-turn": 1.0})  # its episode is gone
    stream_before = with_llm.redis.xlen(with_llm.settings.changes_stream)
    fake.add(answer({"turns": [{**E1, "entities": [*E1["entities"], CONCEPT]}, E2]}))
    counts = jobs.reextract_job(reschedule=False, distiller=distiller)
    assert counts == {
        "succeeded": 2,
        "failed": 0,
        "missing": 1,
        "given_up": 0,
        "entities": 5,
        "pending": 0,
    }
    assert with_llm.redis.zcard(REEXTRACT_PENDING) == 0
    assert names(with_llm, "Concept") == ["at-least-once delivery"]  # the LLM's own entity
    assert names(with_llm, "Service") == ["Redis", "Valkey"]  # offline ones kept
    records, _, _ = with_llm.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=with_llm.graph_database
    )
    assert records[0]["n"] == 2  # the episodes themselves unchanged

    entries = with_llm.redis.xrange(with_llm.settings.changes_stream)[stream_before:]
    upserts = [c for _, f in entries if isinstance(c := decode_change(f), MemoryUpsert)]
    [e1] = [u.memory for u in upserts if u.memory.id == "e1"]
    assert "at-least-once delivery" in e1.entities  # recall replicas learn the new entity

    status = queue_status(with_llm, monkeypatch, capsys)
    assert (
        status["llm_reextract_pending"],
        status["llm_reextract_done"],
        status["llm_reextract_failed"],
    ) == (0, 2, 2)
    # the LLM counters of every process: the failed run's reason, the one call answered
    assert (status["llm_calls"], status["llm_strict_requests"]) == (1, 2)
    assert status["llm_fallback[reextract:LLMUnavailableError]"] == 1
    assert (status["llm_enrich_backlog"], status["llm_enrich_done"]) == (0, 2)
    stats = {k.decode(): int(v) for k, v in with_llm.redis.hgetall(REEXTRACT_STATS).items()}
    assert (stats["runs"], stats["missing"]) == (2, 1)

    requests = len(fake.requests)
    assert jobs.reextract_job(reschedule=False, distiller=distiller)["succeeded"] == 0  # no call
    assert len(fake.requests) == requests


def test_no_llm_endpoint_skips_the_pass(clients: Clients) -> None:
    assert jobs.reextract_job(reschedule=False, distiller=build_distiller(clients)) == {
        "skipped": 1
    }


def test_the_maintenance_worker_runs_the_pass_and_schedules_the_next(
    fake: FakeOpenAI, with_llm: Clients
) -> None:
    from rq.registry import ScheduledJobRegistry

    from turngraph.app import build_maintenance_worker, maintenance_queue

    build_pipeline(with_llm).ingest(TURNS)  # asks for an enrichment run at once
    assert with_llm.redis.zcard(REEXTRACT_PENDING) == 2
    worker = build_maintenance_worker(with_llm)  # schedules the sweep and the next pass
    queue = maintenance_queue(with_llm)
    scheduled = ScheduledJobRegistry(queue=queue).get_job_ids()
    assert any(job_id.startswith(jobs.REEXTRACT_JOB_PREFIX) for job_id in scheduled)
    # the summaries the ingest asked for, and its enrichment run: the endpoint fails (500)
    worker.work(burst=True, with_scheduler=False)
    assert with_llm.redis.zcard(REEXTRACT_PENDING) == 2
    fake.add(answer({"turns": [E1, E2]}))
    job = queue.enqueue(jobs.reextract_job, description="reextract()")
    worker.work(burst=True, with_scheduler=False)
    job.refresh()
    assert job.get_status() == "finished", job.latest_result()
    assert job.return_value() == {
        "succeeded": 2,
        "failed": 0,
        "missing": 0,
        "given_up": 0,
        "entities": 4,
        "pending": 0,
    }
    assert with_llm.redis.zcard(REEXTRACT_PENDING) == 0


def _turn_mentions(clients: Clients, event_id: str) -> list[tuple[str, str, int, list[str]]]:
    records, _, _ = clients.graph.execute_query(
        "MATCH (:Episode {event_id: $id})-[:MENTIONS]->(n) "
        "OPTIONAL MATCH (e:Episode)-[:MENTIONS]->(n) "
        "RETURN n.type AS type, n.name AS name, n.mentions AS mentions, "
        "collect(e.event_id) AS episodes",
        id=event_id,
        database_=clients.graph_database,
    )
    return sorted((r["type"], r["name"], r["mentions"], sorted(r["episodes"])) for r in records)


def _graph_size(clients: Clients) -> tuple[int, int]:
    nodes, _, _ = clients.graph.execute_query(
        "MATCH (n) RETURN count(n) AS n", database_=clients.graph_database
    )
    rels, _, _ = clients.graph.execute_query(
        "MATCH ()-[r]->() RETURN count(r) AS n", database_=clients.graph_database
    )
    return int(nodes[0]["n"]), int(rels[0]["n"])


def test_an_llm_entity_supersedes_the_offline_one_and_a_repeat_changes_nothing(
    fake: FakeOpenAI, with_llm: Clients
) -> None:
    """The offline rules call Valkey a Service; the LLM calls it a Tool: after enrichment
    the turn mentions the Tool, not the Service (issue 36). Enriching it again (the same
    answer) writes nothing: the same mentions, counts and graph size."""
    build_pipeline(with_llm).ingest(TURNS)
    offline = _turn_mentions(with_llm, "e2")
    assert ("Service", "Valkey", 1, ["e2"]) in offline
    tool = {"event_id": "e2", "entities": [ent("Tool", "Valkey")], "facts": []}
    distiller = build_distiller(with_llm)
    assert distiller.reextractor is not None
    fake.add(answer({"turns": [E1, tool]}))
    first = jobs.reextract_job(reschedule=False, distiller=distiller)
    assert (first["succeeded"], first["pending"]) == (2, 0)
    enriched = _turn_mentions(with_llm, "e2")
    assert ("Tool", "Valkey", 1, ["e2"]) in enriched
    assert not [m for m in enriched if m[:2] == ("Service", "Valkey")]  # superseded
    assert ("Service", "Redis", 1, ["e2"]) in enriched  # where they agree: kept
    e1, size = _turn_mentions(with_llm, "e1"), _graph_size(with_llm)

    with_llm.redis.zadd(REEXTRACT_PENDING, {"e1": 1.0, "e2": 1.0})  # enriched again
    fake.add(answer({"turns": [E1, tool]}))
    again = jobs.reextract_job(reschedule=False, distiller=distiller)
    assert (again["succeeded"], again["pending"]) == (2, 0)
    assert _turn_mentions(with_llm, "e2") == enriched
    assert _turn_mentions(with_llm, "e1") == e1
    assert _graph_size(with_llm) == size
