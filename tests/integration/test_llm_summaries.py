"""Summaries against an LLM endpoint that fails or misbehaves (issue 25), through the real
``openai`` client and the local fake server, with the real Redis and graph server: every
failure ends in the stored offline summary, counted, one log event, no traceback (the
``turngraph summarize`` command included); calls are capped and at temperature 0."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from structlog.testing import capture_logs

from tests.integration.test_distill_ondemand import _env, _ingest
from tests.support.distill import decision_events
from tests.support.fake_openai import FakeOpenAI, Reply, answer, error, malformed
from turngraph.app import build_distiller, build_pipeline
from turngraph.cli import main
from turngraph.clients import Clients, build_clients
from turngraph.schemas.summaries import SummaryMethod
from turngraph.workers.extraction.endpoint import OutputMode
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.maintenance.summaries import summarize_last_turns

GOOD = {
    "topic": "Job queue for the ingest workers",
    "context": ["Choosing the job queue for the ingest workers."],
    "decisions": ["Use RQ for the job queue"],
    "rationale": ["RQ is simple"],
    "open_questions": [],
    "next_steps": ["Wire the workers to the chosen queue."],
}


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def _llm_clients(clients: Clients, base_url: str, **update: Any) -> Clients:
    settings = clients.settings.model_copy(
        update={"llm_base_url": base_url, "llm_max_retries": 0, "llm_timeout_s": 5.0, **update}
    )
    return build_clients(settings)


def _summarize(clients: Clients, base_url: str, **update: Any) -> tuple[Any, Any]:
    """Summarize the stored session's last 4 turns through the endpoint at ``base_url``."""
    llm = _llm_clients(clients, base_url, **update)
    try:
        distiller = build_distiller(llm)
        assert distiller.summarizer is not None
        with capture_logs() as logs:
            summary = summarize_last_turns(distiller, "s_od", 4)
        return summary, (distiller.summarizer, logs)
    finally:
        llm.close()


def _fallback_events(logs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for e in logs if e["event"] == "summary_llm_fallback"]


@pytest.mark.parametrize(
    ("replies", "reason"),
    [
        ([error(500)], "LLMUnavailableError"),
        ([error(401)], "LLMConfigurationError"),
        ([Reply(content='{"topic": "Job qu', finish_reason="length")], "answer_cut_at_token_limit"),
        ([Reply(content=""), Reply(content="")], "invalid_twice"),
        ([malformed(), malformed()], "invalid_twice"),
        ([malformed('{"topic": ' + "[" * 5_000 + "]" * 5_000 + "}")] * 2, "invalid_twice"),
    ],
    ids=["500", "401", "cut-at-limit", "empty-twice", "malformed-twice", "nested-twice"],
)
def test_every_llm_failure_stores_the_offline_summary(
    clients: Clients, fake: FakeOpenAI, replies: list[Reply], reason: str
) -> None:
    _ingest(clients)
    fake.add(*replies)
    summary, (summarizer, logs) = _summarize(clients, fake.base_url)
    assert summary is not None and summary.method is SummaryMethod.EXTRACTIVE
    assert summary.content.decisions  # the offline rules found the decisions
    stored = clients.graph.execute_query(
        "MATCH (s:Summary {uid: $uid}) RETURN s.method AS method",
        uid=summary.id,
        database_=clients.graph_database,
    ).records
    assert [r["method"] for r in stored] == ["extractive"]
    assert summarizer.stats.fallbacks == 1 and summarizer.stats.reasons() == {reason: 1}
    [event] = _fallback_events(logs)
    assert event["reason"] == reason and event["log_level"] == "warning"
    assert all("exc_info" not in e for e in logs)  # no traceback
    assert all("RQ" not in str(e) for e in logs)  # no chat text


def test_summary_calls_are_capped_at_temperature_zero(clients: Clients, fake: FakeOpenAI) -> None:
    _ingest(clients)
    fake.add(answer(GOOD))
    summary, _ = _summarize(clients, fake.base_url, llm_summary_max_output_tokens=700)
    assert summary is not None and summary.method is SummaryMethod.LLM
    [request] = fake.requests
    assert (request.body["max_tokens"], request.body["temperature"]) == (700, 0.0)


def test_extra_items_are_cut_not_reasked(clients: Clients, fake: FakeOpenAI) -> None:
    """7 decisions where the schema allows 5: the first 5 are kept (issue 25 dropped the
    summary after a re-ask that did not say what the limit was)."""
    _ingest(clients)
    fake.add(answer({**GOOD, "decisions": [f"Decision {i}" for i in range(7)]}))
    summary, (summarizer, _) = _summarize(clients, fake.base_url)
    assert summary is not None and summary.method is SummaryMethod.LLM
    assert summary.content.decisions == tuple(f"Decision {i}" for i in range(5))
    assert len(fake.requests) == 1 and summarizer.stats.items_cut == 2


def test_the_reask_states_the_limits(clients: Clients, fake: FakeOpenAI) -> None:
    _ingest(clients)
    fake.add(answer({"topic": "x"}), answer(GOOD))
    summary, _ = _summarize(clients, fake.base_url)
    assert summary is not None and summary.method is SummaryMethod.LLM
    reask = fake.requests[1].messages[-1]["content"]
    assert "decisions at most 5 items" in reask and "context at most 3 items" in reask


def test_llama_cpp_python_500_on_json_schema_steps_down_once(clients: Clients) -> None:
    with FakeOpenAI(refuse_formats=("json_schema",), refuse_status=500) as server:
        _ingest(clients)
        server.add(answer(GOOD))
        summary, (summarizer, logs) = _summarize(clients, server.base_url)
        kinds = [r.body["response_format"]["type"] for r in server.requests]
    assert summary is not None and summary.method is SummaryMethod.LLM
    assert kinds == ["json_schema", "json_object"]
    assert summarizer.endpoint.mode is OutputMode.JSON_OBJECT_SCHEMA
    assert [e["event"] for e in logs].count("llm_output_mode_refused") == 1


def test_a_template_dropping_system_messages_gets_them_merged(clients: Clients) -> None:
    with FakeOpenAI(drop_system=True) as server:
        _ingest(clients)
        server.add(answer(GOOD), answer(GOOD))
        llm = _llm_clients(clients, server.base_url)
        try:
            distiller = build_distiller(llm)
            with capture_logs() as logs:
                summarize_last_turns(distiller, "s_od", 4)
                summarize_last_turns(distiller, "s_od", 3)
        finally:
            llm.close()
        first, second = server.requests
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert [m["role"] for m in second.messages] == ["user"]
    assert second.messages[0]["content"].startswith("You summarize one segment")
    assert [e["event"] for e in logs].count("llm_system_prompt_dropped") == 1


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def cli_env(clients: Clients, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Clients]:
    structlog_config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    configure = structlog.configure
    monkeypatch.setattr(
        structlog,
        "configure",
        lambda **options: configure(**{**options, "cache_logger_on_first_use": False}),
    )
    yield from _env(clients, monkeypatch, tmp_path)
    structlog.configure(**structlog_config)
    root.handlers[:] = handlers
    root.setLevel(level)


def test_summarize_command_with_the_endpoint_down_stores_the_offline_summary(
    cli_env: Clients, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    session = "s_" + "5e" * 16  # a stored session id, as `turngraph scopes` lists it
    events = decision_events(session=session, workspace="w_od", user="u_od")
    build_pipeline(cli_env, extractor=OfflineExtractor()).ingest(events)
    monkeypatch.setenv("TURNGRAPH_LLM_BASE_URL", f"http://127.0.0.1:{_closed_port()}/v1")
    monkeypatch.setenv("TURNGRAPH_LLM_MAX_RETRIES", "0")
    capsys.readouterr()
    assert main(["summarize", session, "--last", "3"]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("Topic:")
    assert "Traceback" not in err and err.count("summary_llm_fallback") == 1
    rows = cli_env.graph.execute_query(
        "MATCH (s:Summary {session_id: $session}) RETURN s.method AS method",
        session=session,
        database_=cli_env.graph_database,
    ).records
    assert [r["method"] for r in rows] == ["extractive"]


def test_a_summary_exists_at_once_and_the_llms_replaces_it_when_it_arrives(
    clients: Clients,
) -> None:
    """Issue 36: while the LLM is still writing, the extractive summary is stored and
    readable; the LLM's answer then replaces it under the same id."""
    import threading

    from tests.support.fake_openai import slow
    from tests.support.worker_processes import wait_for

    def methods() -> list[tuple[str, str]]:
        records = clients.graph.execute_query(
            "MATCH (s:Summary) RETURN s.uid AS uid, s.method AS method",
            database_=clients.graph_database,
        ).records
        return [(r["uid"], r["method"]) for r in records]

    with FakeOpenAI() as server:
        _ingest(clients)
        server.add(slow(GOOD, delay_s=30.0))  # answered when the server is told to stop
        done: list[Any] = []
        worker = threading.Thread(target=lambda: done.append(_summarize(clients, server.base_url)))
        worker.start()
        assert wait_for(lambda: server.requests and methods(), 30)
        [(uid, method)] = methods()
        assert method == "extractive"  # stored before the LLM answered
        server.stop_hangs()  # the slow answer ends now, unanswered: the extractive stays
        worker.join(timeout=30)
        assert methods() == [(uid, "extractive")]
        server.add(answer(GOOD))
        summary, _ = _summarize(clients, server.base_url)
    assert summary is not None and summary.method is SummaryMethod.LLM and summary.id == uid
    assert methods() == [(uid, "llm")]  # replaced, same node
