"""Acceptance (issue 12): a conversation that changes a decision twice, through the real
pipeline (bounded enqueue → ingest worker → follow-up jobs → maintenance worker → graph
→ change stream → recall), offline and with the local OpenAI-compatible server, ends with
one DecisionRecord, the older summaries Superseded and linked, and recall for "why did we
choose …" returns the record first with the provenance of all three decision turns."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import fake_openai
from tests.support.distill import DECISION_TURNS, decision_events
from turngraph.app import (
    build_distiller,
    build_ingest_worker,
    build_maintenance_worker,
    build_pipeline,
    build_recall_worker,
    ingest_burst,
)
from turngraph.clients import Clients, build_clients
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.schemas.recall import RecallRequest
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.recall.search import search

pytestmark = pytest.mark.both_engines


def _rows(clients: Clients, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = clients.graph.execute_query(query, database_=clients.graph_database, **params)
    return [record.data() for record in records]


def _converse(clients: Clients, steps: list[range]) -> list[str]:
    """Publish the conversation in steps; after each, drain ingest, then maintenance.
    Extraction is offline in both tests (with an LLM configured, only summaries use it)."""
    events = decision_events()
    queue = BoundedQueue(clients.redis, name=clients.settings.ingest_queue, max_length=100)
    pipeline = build_pipeline(clients, extractor=OfflineExtractor())
    for step in steps:
        queue.enqueue_many([events[i] for i in step])
        ingest_burst(clients, build_ingest_worker(clients, pipeline))
        maintenance = build_maintenance_worker(clients)
        maintenance.work(burst=True, with_scheduler=False)
    return [event.event_id for event in events]


STEPS = [range(0, 3), range(3, 6), range(6, 10)]


def _check_outcome(clients: Clients, event_ids: list[str]) -> None:
    records = _rows(
        clients,
        "MATCH (d:DecisionRecord) RETURN d.uid AS uid, d.topic_id AS topic_id, "
        "d.current_decision AS current",
    )
    assert len(records) == 1, records
    record = records[0]
    assert record["topic_id"] == "job-queue"
    assert "RQ" in record["current"] and "after all" in record["current"]
    linked = _rows(
        clients,
        "MATCH (d:DecisionRecord)-[:SUPERSEDES]->(s:Summary) "
        "RETURN s.status AS status, s.decision_event_ids AS decided ORDER BY s.last_turn",
    )
    assert len(linked) == 3
    assert {row["status"] for row in linked} == {"Superseded"}
    assert [row["decided"] for row in linked] == [[event_ids[i]] for i in DECISION_TURNS]
    # The record leads back to the turns: record -> summaries -> episodes.
    turns = _rows(
        clients,
        "MATCH (:DecisionRecord)-[:SUPERSEDES]->(:Summary)-[:SUMMARIZES]->(e:Episode) "
        "RETURN DISTINCT e.turn_index AS i ORDER BY i",
    )
    assert {row["i"] for row in turns} >= set(DECISION_TURNS)

    recall = build_recall_worker(clients)
    recall.bootstrap()
    response = search(
        recall.index,
        RecallRequest(
            query="why did we choose RQ for the job queue?",
            workspace="w_dec",
            session_id="s_other",
            user="u_dec",
            max_results=5,
        ),
    )
    top = response.results[0]
    assert top.kind == "decision_record", "\n".join(
        f"{r.kind} {r.text[:30]} {r.score}" for r in response.results
    )
    assert top.status == "DecisionRecord" and top.score.status_multiplier == 1.1
    assert top.memory_id == record["uid"]
    assert [event_ids[i] for i in DECISION_TURNS] == top.source_event_ids[:3]
    # Superseded summaries only when asked for.
    assert all(r.status != "Superseded" for r in response.results)
    wider = search(
        recall.index,
        RecallRequest(
            query="why did we choose RQ for the job queue?",
            workspace="w_dec",
            user="u_dec",
            max_results=20,
            include_superseded=True,
            max_tokens=20_000,
        ),
    )
    superseded = [r for r in wider.results if r.status == "Superseded"]
    assert superseded and all(r.score.status_multiplier == 0.4 for r in superseded)
    assert wider.results[0].kind == "decision_record"


def test_decision_changed_twice_offline(clients: Clients) -> None:
    event_ids = _converse(clients, STEPS)
    _check_outcome(clients, event_ids)


def _summary_answer(decision: str, reason: str) -> fake_openai.Reply:
    return fake_openai.answer(
        {
            "topic": "Job queue for the ingest workers",
            "context": ["Choosing the job queue for the ingest workers."],
            "decisions": [decision],
            "rationale": [reason],
            "open_questions": [],
            "next_steps": ["Wire the workers to the chosen queue."],
        },
        prompt_tokens=900,
        completion_tokens=120,
    )


def test_decision_changed_twice_with_llm(clients: Clients) -> None:
    with fake_openai.FakeOpenAI() as server:
        # Extraction stays offline (see _converse); the summaries go through the LLM:
        # one call each, one re-ask for a broken answer.
        server.add(
            _summary_answer("Use RQ for the job queue", "RQ is simple and Redis runs already"),
            fake_openai.malformed('{"topic": '),
            _summary_answer("Switched from RQ to dramatiq", "dramatiq middleware gives retries"),
            _summary_answer("Back to RQ for the job queue after all", "a Lua script bounds RQ"),
        )
        llm_settings = clients.settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_max_retries": 0}
        )
        llm_clients = build_clients(llm_settings)
        try:
            event_ids = _converse(llm_clients, STEPS)
            distiller = build_distiller(llm_clients)
            assert distiller.summarizer is not None
        finally:
            llm_clients.close()
        summary_calls = [
            r for r in server.requests if "conversation_summary" in str(r.body["response_format"])
        ]
    assert len(summary_calls) == 4  # three summaries, one re-asked
    assert summary_calls[2].messages[-1]["role"] == "user"
    assert "invalid" in summary_calls[2].messages[-1]["content"]
    methods = _rows(clients, "MATCH (s:Summary) RETURN s.method AS m, s.topic_id AS t")
    assert all(row["m"] == "llm" for row in methods if row["t"] == "job-queue")
    _check_outcome(clients, event_ids)
