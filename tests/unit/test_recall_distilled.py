"""Distilled memories (summaries, decision records, recaps) against the turns they came
from (issue 20: our own summaries must help, not crowd out)."""

from __future__ import annotations

from tests.support.recall import NOW, memory, request
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import MemoryKind
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.search import search

TURN = "The staging cluster moved to the new region last night; pods came back in minutes."


def _index(ranking: Ranking) -> MemoryIndex:
    index = MemoryIndex(ranking=ranking)
    index.add(memory("deploy", TURN, days_ago=3, session_id="s_ops", entities=("kubernetes",)))
    index.add(memory("lunch", "Lunch at noon?", days_ago=3, session_id="s_ops"))
    for n, name in enumerate(("grafana", "postgres", "redis", "kubernetes", "terraform")):
        index.add(
            memory(f"plan_{n}", f"Talked about {name} in the planning call.", days_ago=2,
                   session_id="s_plan", entities=(name,))
        )  # fmt: skip
    index.add(
        memory(
            "plan_summary",
            "Summary · planning: the quarter's infrastructure work. Next: estimates.",
            days_ago=2,
            session_id="s_plan",
            scope="workspace",
            kind=MemoryKind.SUMMARY,
            status="Final",
            # a digest holds the entities of every turn of its span
            entities=("grafana", "postgres", "redis", "kubernetes", "terraform"),
            source_event_ids=tuple(f"e_plan_{n}" for n in range(5)),
        )
    )
    return index


def test_a_summary_gets_no_graph_signal_from_the_entities_of_its_span() -> None:
    # the query names one entity; the summary holds it (and four others) but does not say it
    response = search(_index(DEFAULT), request("kubernetes status?"), now=NOW)
    ids = [r.memory_id for r in response.results]
    assert "plan_summary" not in ids, ids
    assert set(ids[:2]) == {"deploy", "plan_3"}, ids  # the turns that named it


def test_with_a_graph_share_the_summary_would_match_on_its_entities() -> None:
    # the setting is what keeps it out: with the share back at 1 the digest is a candidate
    ranking = DEFAULT.with_values(distilled_graph_share=1.0)
    response = search(_index(ranking), request("kubernetes status?"), now=NOW)
    summary = next(r for r in response.results if r.memory_id == "plan_summary")
    assert summary.score.graph_score > 0
    assert summary.source_event_ids == [f"e_plan_{n}" for n in range(5)]
