"""Choosing the extractor, micro-batching, and the re-ask message copy."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import get_args

import openai

from turngraph.app import build_extractor
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.schemas.turn_event import ClientInfo, Role, TurnEvent
from turngraph.settings import Settings
from turngraph.workers.extraction.endpoint import OutputMode, SystemPrompt
from turngraph.workers.extraction.llm import micro_batches
from turngraph.workers.extraction.offline import OfflineExtractor, StoreFirst
from turngraph.workers.extraction.prompts import build_messages, reask_messages


def turn(event_id: str, session: str, content: str = "x") -> TurnEvent:
    return TurnEvent(
        event_id=event_id,
        session_id=session,
        workspace="w",
        user="u",
        turn_index=0,
        role=Role.USER,
        content=content,
        occurred_at=datetime(2026, 11, 21, tzinfo=UTC),
        client=ClientInfo(name="t"),
    )


def settings(**kw: object) -> Settings:
    return Settings(_env_file=None, **kw)  # type: ignore[arg-type]


def test_offline_without_an_llm_client() -> None:
    assert isinstance(build_extractor(settings(), None), OfflineExtractor)


def test_with_an_llm_ingest_stores_the_offline_rules_and_marks_every_turn() -> None:
    """Store first (issue 36): ingest never calls the LLM; every turn joins the backlog."""
    client = openai.OpenAI(base_url="http://127.0.0.1:9/v1", api_key="k")
    try:
        built = build_extractor(settings(llm_model="m-1"), client)
        assert isinstance(built, StoreFirst)
        turns = [turn("a1", "a", "We use Postgres 16 for the invoices service.")]
        [marked] = built.extract(turns)
        [offline] = OfflineExtractor().extract(turns)
        assert marked.reextract and marked.entities == offline.entities
    finally:
        client.close()


def test_enrichment_calls_fit_the_endpoint() -> None:
    """1 call at a time for a server on this machine, 4 elsewhere, unless set."""
    assert settings(llm_base_url="http://127.0.0.1:8080/v1").llm_calls_at_once == 1
    assert settings(llm_base_url="http://localhost:11434/v1").llm_calls_at_once == 1
    assert settings(llm_base_url="https://api.example.com/v1").llm_calls_at_once == 4
    assert settings(llm_api_key="k").llm_calls_at_once == 4  # api.openai.com
    assert settings(llm_base_url="http://127.0.0.1/v1", llm_concurrency=3).llm_calls_at_once == 3


def test_micro_batches_keep_sessions_apart_and_bound_size() -> None:
    turns = [turn("a1", "a"), turn("a2", "a"), turn("b1", "b"), turn("a3", "a")]
    assert [[t.event_id for t in b] for b in micro_batches(turns)] == [["a1", "a2"], ["b1"], ["a3"]]
    big = [turn(f"c{i}", "c", "y" * 600) for i in range(5)]
    assert [len(b) for b in micro_batches(big, max_turns=8, max_chars=1_300)] == [2, 2, 1]
    assert [len(b) for b in micro_batches(big, max_turns=3)] == [3, 2]


def test_reask_works_on_a_copy_of_the_messages() -> None:
    messages = build_messages(ONTOLOGY, [turn("a1", "a")])
    before = [dict(m) for m in messages]
    again = reask_messages(messages, "{broken", ["the answer is not valid JSON"])
    assert messages == before and len(messages) == 2
    assert again[:2] == before and again[0] is not messages[0]
    assert [m["role"] for m in again[2:]] == ["assistant", "user"]


def test_the_settings_name_exactly_the_endpoint_modes() -> None:
    """Settings spell the modes as literals (no openai import to read them); the endpoint's
    enums are what they become (``turngraph.clients``): one set of names."""
    fields = Settings.model_fields
    assert set(get_args(fields["llm_output_mode"].annotation)) == {m.value for m in OutputMode}
    assert set(get_args(fields["llm_system_prompt"].annotation)) == {p.value for p in SystemPrompt}
