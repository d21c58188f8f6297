"""One copy per span (issue 20): a Final summary replaces the automatic Drafts of its
span, in the graph and in what recall returns."""

from __future__ import annotations

from typing import Any

from tests.support.distill import decision_events, distiller_for
from turngraph.app import build_graph_store, build_pipeline
from turngraph.clients import Clients
from turngraph.schemas.changes import decode_change
from turngraph.schemas.recall import RecallRequest
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.maintenance.summaries import summarize_last_turns, summarize_session
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.search import search


def _statuses(clients: Clients) -> dict[tuple[int, int], str]:
    records, _, _ = clients.graph.execute_query(
        "MATCH (s:Summary {session_id: 's_one'}) "
        "RETURN s.first_turn AS first, s.last_turn AS last, s.status AS status",
        database_=clients.graph_database,
    )
    return {(int(r["first"]), int(r["last"])): str(r["status"]) for r in records}


def _stream_index(clients: Clients) -> MemoryIndex:
    index = MemoryIndex()
    entries: Any = clients.redis.xrange(clients.settings.changes_stream)
    for _, fields in entries:
        index.apply(decode_change(fields))
    return index


def _summaries_returned(index: MemoryIndex) -> list[str]:
    # asked for a summary: an automatic one that its own turns outrank is left out
    # (assembly.summaries_below_their_turns), and this asks which copies recall returns
    response = search(
        index,
        RecallRequest(
            query="summary: which job queue did we decide on", workspace="w_one", user="u_one",
            max_results=50, max_tokens=100_000,
        ),
    )  # fmt: skip
    return [r.status for r in response.results if r.kind == "summary"]


def test_a_final_replaces_the_drafts_of_its_span(clients: Clients) -> None:
    events = decision_events(session="s_one", workspace="w_one", user="u_one")
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(events)
    distiller = distiller_for(clients)
    drafts = summarize_session(distiller, "s_one")
    assert [(d.first_turn, d.last_turn) for d in drafts] == [(0, 9)]
    assert _summaries_returned(_stream_index(clients)) == ["Draft"]

    final = summarize_last_turns(distiller, "s_one", last_n=6)
    assert final is not None and (final.first_turn, final.last_turn) == (4, 9)
    assert _statuses(clients) == {(0, 9): "Superseded", (4, 9): "Final"}
    assert _summaries_returned(_stream_index(clients)) == ["Final"]

    # a replica bootstrapped from the graph holds the same
    store = build_graph_store(clients)
    booted = MemoryIndex()
    booted.add_many(Memory.from_record(r) for r in store.recallable_memories())
    assert _summaries_returned(booted) == ["Final"]

    same_span = summarize_last_turns(distiller, "s_one", last_n=6)
    assert same_span is not None and same_span.id == final.id
    assert _statuses(clients) == {(0, 9): "Superseded", (4, 9): "Final"}


def test_a_final_of_exactly_a_drafts_span_keeps_one_node_final(clients: Clients) -> None:
    events = decision_events(session="s_one", workspace="w_one", user="u_one")
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(events)
    distiller = distiller_for(clients)
    summarize_session(distiller, "s_one")
    summarize_last_turns(distiller, "s_one", last_n=10)
    assert _statuses(clients) == {(0, 9): "Final"}
    assert _summaries_returned(_stream_index(clients)) == ["Final"]
