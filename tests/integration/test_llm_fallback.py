"""A failing or odd LLM endpoint never loses a turn: output-mode fallback, fenced answers,
the offline rules standing in for a failed batch, all through the real ``openai`` client
against the local fake endpoint (and, for the pipeline, the real Redis and graph server)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest
from pydantic import SecretStr
from structlog.testing import capture_logs

from tests.integration.test_llm_extractor import E1, E2, TURNS, extractor, summary
from tests.support.fake_openai import (
    FakeOpenAI,
    Reply,
    answer,
    error,
    error_text,
    fenced,
    hang,
    malformed,
    slow,
)
from turngraph.clients import Clients
from turngraph.schemas.keys import REEXTRACT_PENDING
from turngraph.settings import Settings
from turngraph.workers.extraction.endpoint import OutputMode
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.output_bounds import max_answer_tokens

OFFLINE = OfflineExtractor()


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def kinds(fake: FakeOpenAI) -> list[str | None]:
    return [(r.body.get("response_format") or {}).get("type") for r in fake.requests]


@pytest.mark.parametrize("status", [400, 500], ids=["vllm-400", "llama-cpp-python-500"])
def test_server_refusing_json_schema_gets_json_object_with_its_schema(status: int) -> None:
    """llama-cpp-python answers ``json_schema`` with a 500 naming ``response_format`` and
    enforces ``{"type": "json_object", "schema": …}`` as a grammar (issue 25)."""
    with FakeOpenAI(refuse_formats=("json_schema",), refuse_status=status) as fake:
        fake.add(answer({"turns": [E1, E2]}), answer({"turns": [E1, E2]}))
        x = extractor(fake, max_retries=0)
        with capture_logs() as logs:
            first, _ = x.extract(TURNS)
        assert summary(first)[0] == [("PullRequest", "#45"), ("File", "workers/graph/writer.py")]
        x.extract(TURNS)  # remembered: no second refusal
        assert kinds(fake) == ["json_schema", "json_object", "json_object"]
        for request in fake.requests[1:]:
            schema = request.body["response_format"]["schema"]
            turn = schema["$defs"]["turn"]["properties"]
            assert turn["event_id"]["enum"] == ["e1", "e2"]  # the batch's own ids
            assert schema["properties"]["turns"]["maxItems"] == 2
            # the richest limits whose longest answer fits the output cap: it always finishes
            assert (turn["entities"]["maxItems"], turn["facts"]["maxItems"]) == (2, 1)
            assert max_answer_tokens(schema) <= request.body["max_tokens"] == 4_096
            assert "JSON Schema" not in request.messages[0]["content"]  # enforced, not told
        assert (x.mode, x.stats.mode_downgrades, x.stats.fallback_batches) == (
            OutputMode.JSON_OBJECT_SCHEMA,
            1,
            0,
        )
    [refused] = [e for e in logs if e["event"] == "llm_output_mode_refused"]
    assert refused["status"] == status and "json_schema" in refused["server_error"]


def test_a_small_output_cap_on_a_grammar_server_gets_one_turn_per_call_that_fits() -> None:
    """A 270M model fills every string and list the grammar allows (issue 25): with 512
    output tokens a call carries one turn, limited so that its longest answer fits."""
    one_each = [answer({"turns": [E1]}), answer({"turns": [E2]})]
    with FakeOpenAI() as fake:
        fake.add(*one_each)
        x = extractor(fake, output_mode=OutputMode.JSON_OBJECT_SCHEMA, max_output_tokens=512)
        first, second = x.extract(TURNS)
    assert [t.event_id for t in (first, second)] == ["e1", "e2"]
    assert len(fake.requests) == 2 and x.turns_per_call == 1
    for request, event_id in zip(fake.requests, ("e1", "e2"), strict=True):
        schema = request.body["response_format"]["schema"]
        turn = schema["$defs"]["turn"]["properties"]
        assert turn["event_id"]["enum"] == [event_id]
        assert (turn["entities"]["maxItems"], turn["facts"]["maxItems"]) == (1, 0)
        assert max_answer_tokens(schema) <= request.body["max_tokens"] == 512
    # a server that enforces no grammar may answer more: read up to the parse limits
    assert summary(first)[0] == [("PullRequest", "#45"), ("File", "workers/graph/writer.py")]


def test_server_refusing_both_formats_gets_the_schema_in_the_prompt_only() -> None:
    with FakeOpenAI(refuse_formats=("json_schema", "json_object")) as fake:
        fake.add(answer({"turns": [E1, E2]}))
        x = extractor(fake)
        assert len(x.extract(TURNS)[1].entities) == 2
        assert kinds(fake) == ["json_schema", "json_object", "json_object", None]
        assert x.mode is OutputMode.PROMPT_ONLY
        system = fake.requests[-1].messages[0]["content"]
        assert "JSON Schema" in system and '"turns"' in system


@pytest.mark.parametrize("prose", [False, True], ids=["fence", "fence-and-prose"])
def test_answer_in_a_code_fence_is_read_without_a_reask(fake: FakeOpenAI, prose: bool) -> None:
    fake.add(fenced({"turns": [E1, E2]}, prose=prose))  # a server ignoring response_format
    x = extractor(fake)
    first, second = x.extract(TURNS)
    assert len(first.entities) == 2 and len(second.entities) == 2
    assert (x.stats.reasks, len(fake.requests)) == (0, 1)


def test_too_long_prompt_is_not_mistaken_for_a_refused_format(fake: FakeOpenAI) -> None:
    fake.add(error_text(400, "This model's maximum context length is 4096 tokens"))
    x = extractor(fake, fallback=OFFLINE)
    with capture_logs() as logs:
        first, _ = x.extract(TURNS)
    assert kinds(fake) == ["json_schema"] and x.mode is OutputMode.JSON_SCHEMA
    assert first.reextract and ("PullRequest", "#45") in summary(first)[0]
    [failed] = [e for e in logs if e["event"] == "extraction_call_failed"]
    assert failed["status"] == 400 and "maximum context length" in failed["server_error"]
    assert all("PR #45" not in json.dumps(e) for e in logs)  # no chat content in logs


@pytest.mark.parametrize(
    "replies",
    [
        [error_text(400, "bad request")] * 3,
        [error(500)],
        [malformed(), malformed()],
        [fenced("not an object"), Reply(content="I cannot help with that.")],
        [Reply(content=""), Reply(content="")],
        [malformed('{"turns": ' + "[" * 5_000)] * 2,  # a small model looping on "["
    ],
    ids=[
        "400-in-every-mode",
        "500",
        "unreadable-twice",
        "prose-twice",
        "empty-twice",
        "nested-past-the-parser",
    ],
)
def test_failed_batch_falls_back_to_the_offline_rules(
    fake: FakeOpenAI, replies: list[Reply]
) -> None:
    fake.add(*replies)
    x = extractor(fake, max_retries=0, fallback=OFFLINE)
    first, second = x.extract(TURNS)
    assert ("PullRequest", "#45") in summary(first)[0]
    assert ("Decision", "use Valkey for the embedded Redis") in summary(second)[0]
    assert first.reextract and second.reextract
    stats = x.stats.snapshot()
    assert (stats["fallback_batches"], stats["fallback_turns"]) == (1, 2)


def test_timeout_falls_back_and_the_endpoint_rests_for_the_cooldown(fake: FakeOpenAI) -> None:
    now = [100.0]
    fake.add(hang())
    x = extractor(fake, max_retries=0, timeout=0.3, fallback=OFFLINE, clock=lambda: now[0])
    assert all(e.reextract for e in x.extract(TURNS))
    assert len(x.extract(TURNS)[0].entities) == 2  # cooling down: no call at all
    assert len(fake.requests) == 1
    now[0] += 31
    fake.add(answer({"turns": [E1, E2]}))
    assert not any(e.reextract for e in x.extract(TURNS))
    assert len(fake.requests) == 2
    assert x.stats.fallback_batches == 2


def test_looping_model_stops_at_the_output_cap_then_falls_back(fake: FakeOpenAI) -> None:
    loop = Reply(content='{"turns": [{"event_id": "e1", "entities": [', finish_reason="length")
    fake.add(loop)
    x = extractor(fake, fallback=OFFLINE, max_output_tokens=256)
    [only] = x.extract(TURNS[:1])
    assert only.reextract and ("File", "workers/graph/writer.py") in summary(only)[0]
    assert [r.body["max_tokens"] for r in fake.requests] == [256]  # no re-ask of a cut answer


def test_cap_parameter_name_and_temperature_follow_the_settings(fake: FakeOpenAI) -> None:
    fake.add(slow({"turns": [E1, E2]}, delay_s=0.2))
    x = extractor(fake, max_tokens_parameter="max_completion_tokens", temperature=None)
    assert len(x.extract(TURNS)[0].entities) == 2
    body = fake.requests[0].body
    assert body["max_completion_tokens"] == 4096
    assert "max_tokens" not in body and "temperature" not in body


def test_turns_missing_from_the_answer_come_from_the_offline_rules(fake: FakeOpenAI) -> None:
    only_first = {"turns": [E1]}
    fake.add(answer(only_first), answer(only_first))
    x = extractor(fake, fallback=OFFLINE)
    first, second = x.extract(TURNS)
    assert not first.reextract and second.reextract
    assert ("Decision", "use Valkey for the embedded Redis") in summary(second)[0]
    assert (x.stats.unanswered_turns, x.stats.fallback_turns) == (1, 1)


@pytest.mark.integration
@pytest.mark.parametrize(
    ("replies", "timeout"),
    [
        ([error_text(400, "bad request")] * 3, 10.0),
        ([hang()], 0.3),
        ([malformed(), malformed()], 10.0),
        ([Reply(content="Sure! Here are the entities: a PR and a file.")] * 2, 10.0),
        (
            [Reply(content='{"turns": [{"event_id": "e1", "entities": [', finish_reason="length")]
            * 5,
            10.0,
        ),
        ([malformed('{"turns": ' + "[" * 5_000 + "]" * 5_000 + "}")] * 2, 10.0),
    ],
    ids=["400", "timeout", "unreadable", "response_format-ignored", "looping-model", "nested"],
)
def test_a_failing_endpoint_never_loses_a_turn(
    fake: FakeOpenAI,
    clients: Clients,
    settings: Settings,
    replies: list[Reply],
    timeout: float,
) -> None:
    """Ingest stores the offline rules' entities without asking the LLM; an enrichment
    run the endpoint fails keeps them, and the turns stay on the backlog."""
    from turngraph.app import build_distiller, build_pipeline
    from turngraph.clients import build_clients
    from turngraph.workers.maintenance.reextract import reextract_pending

    fake.add(*replies)
    configured = settings.model_copy(
        update={
            "llm_base_url": fake.base_url,
            "llm_api_key": SecretStr("k"),
            "llm_max_retries": 0,
            "llm_timeout_s": timeout,
        }
    )
    with_llm = build_clients(configured)
    try:
        result = build_pipeline(with_llm).ingest(TURNS)
        assert fake.requests == []  # ingest never waits for the LLM
        distiller = build_distiller(with_llm)
        assert distiller.reextractor is not None
        run = reextract_pending(distiller, distiller.reextractor)
    finally:
        with_llm.close()
    assert run is not None and run.succeeded == 0 and fake.requests
    assert (result.turns, result.reextract) == (2, 2)
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
    )
    assert records[0]["n"] == 2
    records, _, _ = clients.graph.execute_query(
        "MATCH (d:Decision)-[:APPLIES_TO]->(s:Service) RETURN s.name AS name",
        database_=clients.graph_database,
    )
    assert sorted(r["name"] for r in records) == ["Redis", "Valkey"]  # the offline rules
    pending = clients.redis.zrange(REEXTRACT_PENDING, 0, -1)
    assert sorted(p.decode() for p in pending) == ["e1", "e2"]


@pytest.mark.integration
def test_a_fenced_answer_from_a_server_ignoring_response_format_reaches_the_graph(
    fake: FakeOpenAI, clients: Clients, settings: Settings
) -> None:
    from turngraph.app import build_distiller, build_pipeline
    from turngraph.clients import build_clients
    from turngraph.workers.maintenance.reextract import reextract_pending

    fake.add(fenced({"turns": [E1, E2]}, prose=True))
    configured = settings.model_copy(
        update={"llm_base_url": fake.base_url, "llm_api_key": SecretStr("k")}
    )
    with_llm = build_clients(configured)
    try:
        result = build_pipeline(with_llm).ingest(TURNS)
        distiller = build_distiller(with_llm)
        assert distiller.reextractor is not None
        run = reextract_pending(distiller, distiller.reextractor)
    finally:
        with_llm.close()
    assert (result.turns, result.reextract) == (2, 2)
    assert run is not None and run.succeeded == 2
    records, _, _ = clients.graph.execute_query(
        "MATCH (:Episode {event_id: 'e1'})-[:MENTIONS]->(n) RETURN n.name AS name",
        database_=clients.graph_database,
    )
    assert {"#45", "workers/graph/writer.py"} <= {r["name"] for r in records}
    assert clients.redis.zcard(REEXTRACT_PENDING) == 0


def test_doctor_reports_the_output_mode_the_endpoint_accepts(settings: Settings) -> None:
    from turngraph.doctor.service_checks import check_llm

    with FakeOpenAI(refuse_formats=("json_schema",), refuse_status=500) as server:
        server.add(answer({"ok": True}))
        configured = settings.model_copy(update={"llm_base_url": server.base_url})
        check = check_llm(configured)
    assert check.status.value == "ok", check
    assert "output mode json_object_schema (stepped down)" in check.detail
    assert kinds(server) == ["json_schema", "json_object"]  # one refusal, no retries


def test_a_small_context_the_server_reports_gets_short_requests(settings: Settings) -> None:
    """llama.cpp reports its context (``/props``): at 4096 tokens the short system prompt
    and fewer characters per call, as ``TURNGRAPH_LLM_CONTEXT_TOKENS=4096`` would give."""
    from turngraph.app import llm_request_options
    from turngraph.clients import build_llm

    with FakeOpenAI(n_ctx=4096) as server:
        configured = settings.model_copy(
            update={"llm_base_url": server.base_url, "llm_max_output_tokens": 1024}
        )
        client, endpoint = build_llm(configured)
        try:
            reported = llm_request_options(configured, endpoint)
        finally:
            client.close()
    told = llm_request_options(
        settings.model_copy(update={"llm_context_tokens": 4096, "llm_max_output_tokens": 1024})
    )
    assert reported["short_prompt"] and told["short_prompt"]
    assert reported["batch_max_chars"] == told["batch_max_chars"] == (4096 - 1024 - 1500) * 3


def test_a_template_dropping_the_system_message_gets_it_merged_for_extraction() -> None:
    with FakeOpenAI(drop_system=True) as fake:
        fake.add(answer({"turns": [E1, E2]}), answer({"turns": [E1, E2]}))
        x = extractor(fake)
        with capture_logs() as logs:
            x.extract(TURNS)
            x.extract(TURNS)
    first, second = fake.requests
    assert [m["role"] for m in first.messages] == ["system", "user"]
    assert [m["role"] for m in second.messages] == ["user"]
    merged = second.messages[0]["content"]
    assert merged.startswith("You extract a knowledge graph") and '"event_id": "e1"' in merged
    assert x.stats.system_prompt_dropped == 1
    [event] = [e for e in logs if e["event"] == "llm_system_prompt_dropped"]
    assert event["prompt_tokens"] * 6 < event["message_chars"]


@pytest.mark.integration
def test_the_output_mode_is_found_once_per_deployment(clients: Clients, settings: Settings) -> None:
    """llama-cpp-python's 500 to ``json_schema`` is met once for the whole deployment: not
    retried by the client (issue 36 counted 3 strict requests per process), and the mode
    found is kept in Redis for every other process; another model is probed again."""
    from turngraph.clients import build_clients

    def process(server: FakeOpenAI, model: str = "m-1") -> Clients:
        return build_clients(
            settings.model_copy(
                update={"llm_base_url": server.base_url, "llm_model": model, "llm_max_retries": 2}
            )
        )

    with FakeOpenAI(refuse_formats=("json_schema",), refuse_status=500, echo=True) as server:
        for model in ("m-1", "m-1", "m-1", "m-2"):  # three processes of one model, then another
            built = process(server, model)
            try:
                assert built.llm is not None and built.llm_endpoint is not None
                x = extractor(server, endpoint=built.llm_endpoint)
                assert not any(e.reextract for e in x.extract(TURNS))
                assert built.llm_endpoint.mode is OutputMode.JSON_OBJECT_SCHEMA
            finally:
                built.close()
        sent = [(r.body["model"], (r.body.get("response_format") or {}).get("type"))
                for r in server.requests]  # fmt: skip
    assert [kind for _, kind in sent].count("json_schema") == 2, sent
    assert sent[:2] == [("m-1", "json_schema"), ("m-1", "json_object")]
    assert sent[4:6] == [("m-2", "json_schema"), ("m-2", "json_object")]
