"""The LLM extractor through the real ``openai`` client against a local fake endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import openai
import pytest
import structlog
from pydantic import SecretStr

from tests.support.fake_openai import FakeOpenAI, answer, error, hang, malformed
from turngraph.clients import Clients
from turngraph.schemas.errors import ConfigurationError, TransientError
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.schemas.turn_event import ClientInfo, Role, TurnEvent
from turngraph.settings import Settings
from turngraph.workers.extraction.errors import LLMConfigurationError, LLMUnavailableError
from turngraph.workers.extraction.llm import LLMExtractor
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.graph.writer import GraphWriter

RETRY_AFTER_S = 0.8
"""Longer than the openai client's own first backoff (at most 0.5 s): a retry this late
shows the Retry-After header was honoured."""


def turn(event_id: str, content: str, session: str = "s1", index: int = 0) -> TurnEvent:
    return TurnEvent(
        event_id=event_id,
        session_id=session,
        workspace="w1",
        user="u1",
        turn_index=index,
        role=Role.USER,
        content=content,
        occurred_at=datetime(2026, 11, 21, 5, 0, index, tzinfo=UTC),
        client=ClientInfo(name="test"),
    )


def ent(type_name: str, name: str, **attrs: str) -> dict[str, Any]:
    return {
        "type": type_name,
        "name": name,
        "aliases": [],
        "summary": "",
        "attributes": [{"key": k, "value": v} for k, v in attrs.items()],
    }


def fact(rel: str, src: tuple[str, str], dst: tuple[str, str]) -> dict[str, Any]:
    return {
        "relation": rel,
        "source": {"type": src[0], "name": src[1]},
        "target": {"type": dst[0], "name": dst[1]},
        "statement": f"{src[1]} {rel} {dst[1]}",
    }


E1 = {
    "event_id": "e1",
    "entities": [ent("PullRequest", "#45"), ent("File", "workers/graph/writer.py")],
    "facts": [fact("MODIFIES", ("PullRequest", "#45"), ("File", "workers/graph/writer.py"))],
}
E2 = {
    "event_id": "e2",
    "entities": [
        ent("Decision", "use Valkey for the embedded Redis", subject="embedded redis"),
        ent("Service", "Valkey"),
    ],
    "facts": [
        fact(
            "APPLIES_TO",
            ("Decision", "use Valkey for the embedded Redis"),
            ("Service", "Valkey"),
        )
    ],
}
TURNS = [
    turn("e1", "PR #45 changes workers/graph/writer.py", index=0),
    turn("e2", "decision: use Valkey for the embedded Redis", index=1),
]


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def extractor(
    fake: FakeOpenAI, *, max_retries: int = 2, timeout: float = 10.0, **kw: Any
) -> LLMExtractor:
    client = openai.OpenAI(
        base_url=fake.base_url, api_key="test-key", timeout=timeout, max_retries=max_retries
    )
    return LLMExtractor(client, model="fake-model", **kw)


def summary(extraction: Any) -> tuple[list[tuple[str, str]], list[tuple[str, str, str]]]:
    return (
        [(e.type, e.name) for e in extraction.entities],
        [(f.relation, f.source.name, f.target.name) for f in extraction.facts],
    )


def test_consecutive_turns_share_one_structured_call(fake: FakeOpenAI) -> None:
    fake.add(answer({"turns": [E1, E2]}, prompt_tokens=900, completion_tokens=120))
    x = extractor(fake)
    first, second = x.extract(TURNS)

    assert summary(first) == (
        [("PullRequest", "#45"), ("File", "workers/graph/writer.py")],
        [("MODIFIES", "#45", "workers/graph/writer.py")],
    )
    assert summary(second) == (
        [("Decision", "use Valkey for the embedded Redis"), ("Service", "Valkey")],
        [("APPLIES_TO", "use Valkey for the embedded Redis", "Valkey")],
    )
    assert second.entities[0].attributes == {"subject": "embedded redis"}
    assert (first.dropped, second.dropped) == (0, 0)

    [request] = fake.requests
    body = request.body
    assert body["model"] == "fake-model"
    assert (body["temperature"], body["max_tokens"]) == (0.0, 4096)  # settings' defaults
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    enum = body["response_format"]["json_schema"]["schema"]["$defs"]["entity"]
    assert enum["properties"]["type"]["enum"] == list(ONTOLOGY.labels())
    sent = json.loads(body["messages"][1]["content"].split("\n", 1)[1])
    assert [t["event_id"] for t in sent] == ["e1", "e2"]

    stats = x.stats.snapshot()
    assert {k: stats[k] for k in ("turns", "batches", "calls", "reasks")} == {
        "turns": 2,
        "batches": 1,
        "calls": 1,
        "reasks": 0,
    }
    assert (stats["prompt_tokens"], stats["completion_tokens"]) == (900, 120)
    assert x.stats.per_turn() == {
        "calls_per_turn": 0.5,
        "prompt_tokens_per_turn": 450.0,
        "completion_tokens_per_turn": 60.0,
    }


def test_batches_follow_sessions_and_size(fake: FakeOpenAI) -> None:
    turns = [turn(f"a{i}", "text", "sa", i) for i in range(3)] + [
        turn(f"b{i}", "text", "sb", i) for i in range(2)
    ]
    empty: dict[str, list[Any]] = {"entities": [], "facts": []}
    fake.add(
        answer({"turns": [{"event_id": "a0", **empty}, {"event_id": "a1", **empty}]}),
        answer({"turns": [{"event_id": "a2", **empty}]}),
        answer({"turns": [{"event_id": "b0", **empty}, {"event_id": "b1", **empty}]}),
    )
    x = extractor(fake, batch_max_turns=2)
    results = x.extract(turns)
    assert [r.event_id for r in results] == ["a0", "a1", "a2", "b0", "b1"]
    sent = [
        [t["event_id"] for t in json.loads(r.messages[1]["content"].split("\n", 1)[1])]
        for r in fake.requests
    ]
    assert sent == [["a0", "a1"], ["a2"], ["b0", "b1"]]
    assert x.stats.calls == 3 and x.stats.turns == 5


def test_malformed_answer_is_reasked_once_on_a_copy_of_the_messages(fake: FakeOpenAI) -> None:
    fake.add(malformed('{"turns": [{"event_id": "e1"'), answer({"turns": [E1, E2]}))
    x = extractor(fake)
    with structlog.testing.capture_logs() as logs:
        first, second = x.extract(TURNS)
    assert summary(first)[1] == [("MODIFIES", "#45", "workers/graph/writer.py")]
    assert len(second.entities) == 2

    original, reask = fake.requests
    assert reask.messages[:2] == original.messages  # the first two messages, unchanged
    assert reask.messages[2] == {"role": "assistant", "content": '{"turns": [{"event_id": "e1"'}
    assert "not valid JSON" in reask.messages[3]["content"]
    stats = x.stats.snapshot()
    assert (stats["calls"], stats["reasks"], stats["invalid_answers"], stats["dropped"]) == (
        2,
        1,
        1,
        0,
    )
    assert x.stats.per_turn()["calls_per_turn"] == 1.0
    assert all("Valkey" not in json.dumps(event, default=str) for event in logs)


def test_answer_still_invalid_after_the_reask_keeps_what_validates(fake: FakeOpenAI) -> None:
    bad = {
        "event_id": "e1",
        "entities": [ent("PullRequest", "#45"), ent("Person", "alice"), "not an object"],
        "facts": [
            fact("MODIFIES", ("Person", "alice"), ("Tool", "pytest")),  # domain violation
            fact("AUTHORED", ("Person", "alice"), ("PullRequest", "#45")),
        ],
    }
    fake.add(answer({"turns": [bad, E2]}), answer({"turns": [bad, E2]}))
    x = extractor(fake)
    first, second = x.extract(TURNS)
    assert summary(first) == (
        [("PullRequest", "#45"), ("Person", "alice")],
        [("AUTHORED", "alice", "#45")],
    )
    assert first.dropped == 2 and second.dropped == 0
    reask_text = fake.requests[1].messages[3]["content"]
    assert "MODIFIES does not accept Person -> Tool" in reask_text
    assert "entities[2]: not an object" in reask_text
    stats = x.stats.snapshot()
    assert (stats["calls"], stats["reasks"], stats["invalid_answers"], stats["dropped"]) == (
        2,
        1,
        2,
        2,
    )


def test_two_unreadable_answers_give_empty_extractions_counted(fake: FakeOpenAI) -> None:
    fake.add(malformed("not json"), answer({"wrong": "shape"}))
    x = extractor(fake)
    results = x.extract(TURNS)
    assert [(r.entities, r.facts, r.dropped) for r in results] == [([], [], 1), ([], [], 1)]
    assert "does not match the schema" in fake.requests[1].messages[3]["content"] or (
        "not valid JSON" in fake.requests[1].messages[3]["content"]
    )
    stats = x.stats.snapshot()
    assert (stats["calls"], stats["invalid_answers"], stats["unanswered_turns"]) == (2, 2, 2)
    assert stats["dropped"] == 2


def test_missing_turn_in_the_answer_is_asked_for_again(fake: FakeOpenAI) -> None:
    fake.add(answer({"turns": [E1]}), answer({"turns": [E1, E2]}))
    x = extractor(fake)
    _, second = x.extract(TURNS)
    assert len(second.entities) == 2
    assert "no result for event_id(s) ['e2']" in fake.requests[1].messages[3]["content"]
    assert x.stats.unanswered_turns == 0


def test_429_with_retry_after_is_retried_by_the_client(fake: FakeOpenAI) -> None:
    fake.add(error(429, {"Retry-After": str(RETRY_AFTER_S)}), answer({"turns": [E1, E2]}))
    x = extractor(fake, max_retries=2)
    first, _ = x.extract(TURNS)
    assert len(first.entities) == 2
    limited, retried = fake.requests
    assert retried.at - limited.at >= RETRY_AFTER_S
    assert retried.headers.get("x-stainless-retry-count") == "1"
    assert x.stats.calls == 1 and x.stats.transient_failures == 0


def test_rate_limit_that_outlasts_the_retries_is_a_transient_error(fake: FakeOpenAI) -> None:
    fake.add(*(error(429, {"Retry-After": "0.05"}) for _ in range(2)))
    x = extractor(fake, max_retries=1)
    with pytest.raises(LLMUnavailableError, match="429") as info:
        x.extract(TURNS)
    assert isinstance(info.value, TransientError)
    assert isinstance(info.value.__cause__, openai.RateLimitError)
    assert len(fake.requests) == 2
    assert x.stats.transient_failures == 1 and x.stats.calls == 0


def test_server_error_then_success(fake: FakeOpenAI) -> None:
    fake.add(error(503, {"Retry-After": "0.05"}), answer({"turns": [E1, E2]}))
    x = extractor(fake, max_retries=1)
    assert len(x.extract(TURNS)[1].entities) == 2
    assert len(fake.requests) == 2


def test_timeout_is_a_transient_error(fake: FakeOpenAI) -> None:
    fake.add(hang())
    x = extractor(fake, max_retries=0, timeout=0.5)
    with pytest.raises(LLMUnavailableError, match="timed out") as info:
        x.extract(TURNS)
    assert isinstance(info.value, TransientError)
    assert len(fake.requests) == 1


def test_bad_key_is_a_configuration_error(fake: FakeOpenAI) -> None:
    fake.add(error(401))
    with pytest.raises(LLMConfigurationError) as info:
        extractor(fake).extract(TURNS)
    assert isinstance(info.value, ConfigurationError)
    assert "test-key" not in str(info.value)


@pytest.mark.integration
def test_graph_gets_exactly_the_extracted_entities_and_facts(
    fake: FakeOpenAI, clients: Clients
) -> None:
    fake.add(answer({"turns": [E1, E2]}))
    x = extractor(fake)
    writer = GraphWriter(
        clients.graph,
        clients.graph_database,
        entity_labels=ONTOLOGY.labels(),
        relation_types=ONTOLOGY.relationship_types(),
    )
    extractions = x.extract(TURNS)
    writer.write(list(zip(TURNS, extractions, strict=True)))
    writer.write(list(zip(TURNS, extractions, strict=True)))  # re-delivery changes nothing

    def graph() -> tuple[list[Any], list[Any]]:
        nodes, _, _ = clients.graph.execute_query(
            "MATCH (n) WHERE n.uid IS NOT NULL RETURN n.type AS type, n.name AS name, "
            "n.mentions AS mentions ORDER BY type, name",
            database_=clients.graph_database,
        )
        rels, _, _ = clients.graph.execute_query(
            "MATCH (a)-[r]->(b) WHERE a.uid IS NOT NULL AND b.uid IS NOT NULL "
            "RETURN a.name AS a, type(r) AS rel, b.name AS b ORDER BY rel",
            database_=clients.graph_database,
        )
        return [tuple(r.values()) for r in nodes], [tuple(r.values()) for r in rels]

    nodes, rels = graph()
    assert nodes == [
        ("Decision", "use Valkey for the embedded Redis", 1),
        ("File", "workers/graph/writer.py", 1),
        ("PullRequest", "#45", 1),
        ("Service", "Valkey", 1),
    ]
    assert rels == [
        ("use Valkey for the embedded Redis", "APPLIES_TO", "Valkey"),
        ("#45", "MODIFIES", "workers/graph/writer.py"),
    ]
    assert x.stats.calls == 1


def test_answer_cut_at_the_output_limit_falls_back_and_asks_fewer_turns_next(
    fake: FakeOpenAI,
) -> None:
    """A cut answer costs one call, not a cascade of halves (issue 25: 5 turns, 4 calls)."""
    cut = malformed('{"turns": [{"event_id": "e1", "entities": [')
    cut.finish_reason = "length"
    fake.add(cut, answer({"turns": [E1]}), answer({"turns": [E2]}))
    x = extractor(fake, fallback=OfflineExtractor())
    first, second = x.extract(TURNS)
    assert first.reextract and second.reextract  # the offline rules; the LLM later
    assert ("PullRequest", "#45") in summary(first)[0]
    assert (len(fake.requests), x.stats.truncated_answers, x.batch_max_turns) == (1, 1, 1)
    first, second = x.extract(TURNS)  # one turn per call from now on
    assert not first.reextract and not second.reextract
    assert summary(first)[0][:2] == [("PullRequest", "#45"), ("File", "workers/graph/writer.py")]
    sent = [
        [t["event_id"] for t in json.loads(r.messages[1]["content"].split("\n", 1)[1])]
        for r in fake.requests
    ]
    assert sent == [["e1", "e2"], ["e1"], ["e2"]]
    assert (x.stats.calls, x.stats.reasks) == (3, 0)


@pytest.mark.integration
def test_configured_endpoint_enriches_what_ingest_stored(
    fake: FakeOpenAI, clients: Clients, settings: Settings
) -> None:
    from turngraph.app import build_distiller, build_pipeline
    from turngraph.clients import build_clients
    from turngraph.workers.maintenance.reextract import reextract_pending

    fake.add(answer({"turns": [E1, E2]}))
    configured = settings.model_copy(
        update={"llm_base_url": fake.base_url, "llm_api_key": SecretStr("k"), "llm_max_retries": 0}
    )
    with_llm = build_clients(configured)
    try:
        result = build_pipeline(with_llm).ingest(TURNS)
        assert fake.requests == []  # stored first: the offline rules
        distiller = build_distiller(with_llm)
        assert distiller.reextractor is not None
        run = reextract_pending(distiller, distiller.reextractor)
    finally:
        with_llm.close()
    assert (result.turns, result.reextract) == (2, 2)
    assert run is not None and (run.succeeded, run.entities) == (2, 4)
    assert len(fake.requests) == 1  # two consecutive turns of one session: one call
    records, _, _ = clients.graph.execute_query(
        "MATCH (:Decision)-[:APPLIES_TO]->(s:Service) RETURN s.name AS name",
        database_=clients.graph_database,
    )
    assert "Valkey" in [r["name"] for r in records]


def test_attached_references_are_sent_and_kept(fake: FakeOpenAI) -> None:
    from turngraph.schemas.turn_event import Reference

    with_refs = TURNS[0].model_copy(
        update={
            "references": (
                Reference(kind="file", value="workers/graph/writer.py"),
                Reference(kind="branch", value="fix/writer"),
            )
        }
    )
    fake.add(answer({"turns": [E1, E2]}))
    first, _ = extractor(fake).extract([with_refs, TURNS[1]])
    assert [(e.type, e.name) for e in first.entities] == [
        ("PullRequest", "#45"),
        ("File", "workers/graph/writer.py"),
        ("Branch", "fix/writer"),  # attached, not in the answer: added, not duplicated
    ]
    sent = json.loads(fake.requests[0].messages[1]["content"].split("\n", 1)[1])
    assert sent[0]["references"][1] == {"kind": "branch", "value": "fix/writer"}
