"""Promotion: memory directives auto-promoted (opt-in) into workspace or user scope, never
when they look like a secret (the whole secret corpus); ownership context once per
scope; promotion on request."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.distill import distiller_for
from tests.support.turns import turn
from turngraph.app import build_maintenance_worker, build_pipeline
from turngraph.clients import Clients
from turngraph.schemas.memories import PromotionKind
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.maintenance.promotion import SecretContentError, looks_secret, promote

pytestmark = pytest.mark.both_engines

CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "data" / "secrets_corpus.jsonl")
    .read_text()
    .splitlines()
    if line.strip()
]


def _rows(clients: Clients, query: str, **params: Any) -> list[dict[str, Any]]:
    records, _, _ = clients.graph.execute_query(query, database_=clients.graph_database, **params)
    return [record.data() for record in records]


def _run_maintenance(clients: Clients) -> None:
    build_maintenance_worker(clients).work(burst=True, with_scheduler=False)


def test_every_corpus_secret_looks_secret() -> None:
    assert CORPUS
    for entry in CORPUS:
        assert looks_secret(entry["content"]), entry["kind"]


def test_secret_directives_are_never_promoted(clients: Clients) -> None:
    clients = dataclasses.replace(
        clients, settings=clients.settings.model_copy(update={"auto_promote": True})
    )
    events = []
    for index, entry in enumerate(CORPUS):
        body = " ".join(entry["content"].split())
        kind = ("preference (user)", "decision", "procedure")[index % 3]
        events.append(turn(f"{kind}: {body}", index, session="s_sec", workspace="w_sec"))
    innocent = len(events)
    events.append(turn("preference (user): answer in short bullet points", innocent,
                       session="s_sec", workspace="w_sec"))  # fmt: skip
    events.append(turn("terminology: a tombstone marks a forgotten scope", innocent + 1,
                       session="s_sec", workspace="w_sec"))  # fmt: skip
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(events)
    _run_maintenance(clients)

    memories = _rows(
        clients, "MATCH (m:Memory) WHERE m.kind <> 'ownership_context' "
        "RETURN m.kind AS kind, m.scope AS scope, m.text AS text, m.memory AS memory",
    )  # fmt: skip
    texts = " ".join(str(m["text"]) + str(m["memory"]) for m in memories)
    for entry in CORPUS:
        assert entry["secret"] not in texts
    assert "REDACTED" not in texts
    kinds = {(m["kind"], m["scope"]) for m in memories}
    assert ("preference", "user") in kinds and ("terminology", "workspace") in kinds
    assert len(memories) == 2, [m["text"] for m in memories]


def test_directives_are_not_promoted_without_opt_in(clients: Clients) -> None:
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(
        [turn("preference (user): answer in short bullet points", 0)]
    )
    _run_maintenance(clients)
    assert not _rows(clients, "MATCH (m:Memory) WHERE m.kind = 'preference' RETURN m.uid AS u")


def test_ownership_context_once_per_scope_without_paths(clients: Clients) -> None:
    pipeline = build_pipeline(clients, extractor=OfflineExtractor())
    pipeline.ingest([turn("hello from /home/dana/projects/secret-app", 0, session="s_own")])
    _run_maintenance(clients)
    pipeline.ingest([turn("second session", 0, session="s_own2")])
    _run_maintenance(clients)
    rows = _rows(
        clients, "MATCH (m:Memory {kind: 'ownership_context'}) "
        "RETURN m.scope AS scope, m.session_id AS session, m.text AS text ORDER BY m.scope",
    )  # fmt: skip
    scopes = sorted((r["scope"], r["session"]) for r in rows)
    assert scopes == [("session", "s_own"), ("session", "s_own2"), ("workspace", None)]
    assert all("/home" not in r["text"] and "Owner u1 owns" in r["text"] for r in rows)


def test_promotion_on_request(clients: Clients) -> None:
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(
        [turn("the flaky test was a race in the cache warmer", 0)]
    )
    distiller = distiller_for(clients)
    source = _rows(clients, "MATCH (e:Episode) RETURN e.event_id AS id")[0]["id"]
    first = promote(
        distiller, kind=PromotionKind.LESSON_LEARNED, text="Cache warmers race with readers",
        scope="user", user="u1", workspace="w1", source_event_ids=(source,),
    )  # fmt: skip
    again = promote(
        distiller, kind=PromotionKind.LESSON_LEARNED, text="cache warmers race  with readers",
        scope="user", user="u1", workspace="w1", source_event_ids=(source,),
    )  # fmt: skip
    assert first.id == again.id and first.scope == "user" and first.workspace is None
    rows = _rows(clients, "MATCH (m:Memory {kind: 'lesson_learned'})-[:DERIVED_FROM]->(e) "
                 "RETURN m.scope_key AS key, e.event_id AS e")  # fmt: skip
    assert rows == [{"key": "u1", "e": source}]
    with pytest.raises(SecretContentError):
        promote(
            distiller, kind=PromotionKind.PREFERENCE, text=f"use {CORPUS[0]['secret']}",
            scope="workspace", user="u1", workspace="w1", source_event_ids=(source,),
        )  # fmt: skip
