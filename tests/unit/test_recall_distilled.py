"""Distilled memories (summaries, decision records, recaps) against the turns they came
from (issue 20: our own summaries must help, not crowd out)."""

from __future__ import annotations

from dataclasses import dataclass

from tests.support.recall import NOW, memory, request
from turngraph.workers.recall.assembly import summaries_after, summaries_below_their_turns
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory, MemoryKind
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.search import search

PLAN_TURNS = tuple(f"e_plan_{n}" for n in range(5))
TURN = "The staging cluster moved to the new region last night; pods came back in minutes."


def _index(
    ranking: Ranking, sources: tuple[str, ...] = PLAN_TURNS, status: str = "Final"
) -> MemoryIndex:
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
            status=status,
            # a digest holds the entities of every turn of its span
            entities=("grafana", "postgres", "redis", "kubernetes", "terraform"),
            source_event_ids=sources,
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
    # (its sources are turns outside the index here: one of its own turns ranking above it
    # would leave it out, test_a_summary_its_own_turn_outranks_is_left_out)
    ranking = DEFAULT.with_values(distilled_graph_share=1.0)
    sources = ("e_gone_0", "e_gone_1")
    response = search(_index(ranking, sources), request("kubernetes status?"), now=NOW)
    summary = next(r for r in response.results if r.memory_id == "plan_summary")
    assert summary.score.graph_score > 0
    assert summary.source_event_ids == list(sources)


def _summary_first_index() -> MemoryIndex:
    index = MemoryIndex()
    index.add(
        memory(
            "span_summary",
            "Summary · release checklist: release checklist, release notes, release tags. "
            "Next: release checklist review.",
            days_ago=1,
            session_id="s_rel",
            scope="workspace",
            kind=MemoryKind.SUMMARY,
            status="Final",
            source_event_ids=("e_r0", "e_r1", "e_r2"),
        )
    )
    index.add(memory("r0", "Where is the release checklist kept?", session_id="s_rel"))
    index.add(memory("r1", "The release checklist lives in docs/release.md.", session_id="s_rel"))
    index.add(memory("other", "We tag a release from main.", session_id="s_older", days_ago=9))
    return index


def test_a_summary_follows_the_turns_that_lead_the_answer() -> None:
    response = search(_summary_first_index(), request("release checklist"), now=NOW)
    ids = [r.memory_id for r in response.results]
    assert "span_summary" in ids and ids.index("span_summary") == 2, ids
    # it ranked first on its own words: the setting is what moved it
    unmoved = MemoryIndex(ranking=DEFAULT.with_values(summaries_after=0))
    for item in _summary_first_index().snapshot().values():
        unmoved.add(item)
    first = search(unmoved, request("release checklist"), now=NOW).results[0]
    assert first.memory_id == "span_summary"


def test_summaries_after_keeps_the_order_of_everything_else() -> None:
    kinds = [MemoryKind.SUMMARY, MemoryKind.SUMMARY, MemoryKind.EPISODE, MemoryKind.FACT,
             MemoryKind.SUMMARY, MemoryKind.EPISODE]  # fmt: skip
    items = [_Item(memory(f"m{n}", "x", kind=kind)) for n, kind in enumerate(kinds)]
    placed = [item.memory.id for item in summaries_after(items, 2)]
    assert placed == ["m2", "m3", "m0", "m1", "m4", "m5"]
    assert [i.memory.id for i in summaries_after(items[:2], 2)] == ["m0", "m1"]  # no turns
    assert [i.memory.id for i in summaries_after(items, 0)] == [f"m{n}" for n in range(6)]


@dataclass(frozen=True)
class _Item:
    memory: Memory


def test_a_summary_its_own_turn_outranks_is_left_out() -> None:
    # graph share 1: the automatic summary ranks by its span's entities, below the turn
    # that named "kubernetes" (plan_3, one of its sources): that turn answers, it is left out
    ranking = DEFAULT.with_values(distilled_graph_share=1.0)
    for status, kept in (("Draft", False), ("Final", True)):  # a Final was asked for
        index = _index(ranking, status=status)
        ids = [r.memory_id for r in search(index, request("kubernetes status?"), now=NOW).results]
        assert "plan_3" in ids and ("plan_summary" in ids) is kept, (status, ids)


def test_summaries_below_their_turns_keeps_a_summary_above_them() -> None:
    summary = memory(
        "s", "x", kind=MemoryKind.SUMMARY, status="Draft", source_event_ids=("e_a", "e_b")
    )
    own = memory("a", "x")  # source e_a
    other = memory("c", "x")  # source e_c, not the summary's
    fact = memory("f", "x", kind=MemoryKind.FACT, source_event_ids=("e_b",))
    kept = [
        i.memory.id for i in summaries_below_their_turns([_Item(m) for m in (other, summary, own)])
    ]
    assert kept == ["c", "s", "a"]  # it outranks its own turn: it stays
    below = [_Item(m) for m in (own, other, summary)]
    assert [i.memory.id for i in summaries_below_their_turns(below)] == ["a", "c"]
    # only a turn of its span counts, not a fact taken from it
    assert [i.memory.id for i in summaries_below_their_turns([_Item(fact), _Item(summary)])] == [
        "f",
        "s",
    ]


def _chain_index(with_summary: bool) -> MemoryIndex:
    # one chain source: the best lexical hit's neighbouring turns join the candidates
    index = MemoryIndex(ranking=DEFAULT.with_values(chain_sources=1, session_weight=0.0))
    index.add(memory("ask", "Which hiking boots should I buy?", session_id="s_old", turn_index=0))
    index.add(memory("answer", "Leather ones, resoled twice.", session_id="s_old", turn_index=1))
    if with_summary:
        index.add(
            memory(
                "boots_summary",
                "Summary · hiking boots: boots compared, hiking boots chosen.",
                session_id="s_old",
                kind=MemoryKind.SUMMARY,
                status="Final",
                source_event_ids=("e_gone_0", "e_gone_1"),
            )
        )
    return index


def test_a_summary_takes_no_chain_source_place_from_a_turn() -> None:
    # the summary says the query's words most often: it is the best lexical hit, but it has
    # no neighbouring turns; the turn after the asking turn comes in by the chain either way
    for with_summary in (False, True):
        ids = [
            r.memory_id
            for r in search(_chain_index(with_summary), request("hiking boots"), now=NOW).results
        ]
        assert "answer" in ids, (with_summary, ids)
    assert "boots_summary" in ids  # still returned: it takes a place in the answer, not the chain's


def _ownership_index() -> MemoryIndex:
    index = MemoryIndex(ranking=DEFAULT)
    for n in range(3):
        index.add(
            memory(
                f"own_{n}",
                f"Owner u_1 owns this session scope (session s_{n}). Git: branch main.",
                session_id=f"s_{n}",
                kind=MemoryKind.PROMOTED,
                extra={"memory_kind": "ownership_context", "origin": "system"},
            )
        )
        index.add(memory(f"turn_{n}", f"Session {n}: we set up the main deploy script.",
                         session_id=f"s_{n}"))  # fmt: skip
    return index


def test_an_ownership_context_answers_only_a_question_about_ownership() -> None:
    index = _ownership_index()
    # a question about what was said: the turns, no ownership sentence (they match "main"
    # and "session" as well as the turns do)
    ids = [r.memory_id for r in search(index, request("main session deploy"), now=NOW).results]
    assert ids and all(i.startswith("turn_") for i in ids), ids
    for query in ("who owns this session?", "which branch was session 1 on?"):
        ids = [r.memory_id for r in search(index, request(query), now=NOW).results]
        assert any(i.startswith("own_") for i in ids), (query, ids)
