"""The corpus statistics are what was said (issue 20: distilled memories must not move
the turns' ranking). A summary, recap or decision record restates its turns' words and an
ownership context is one boilerplate sentence per session: they are searched, but do not
count in a partition's documents, mean length or document frequencies."""

from __future__ import annotations

import pytest

from tests.support.recall import memory
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory, MemoryKind
from turngraph.workers.recall.text import tokenize

WS = ("workspace", "ws_a")
QUERY = "which message broker did we pick for billing events"

TURNS = (
    "We picked Kafka as the message broker for billing events.",
    "RabbitMQ was the other broker we looked at; its queues were simpler.",
    "Billing events need ordering per customer, so partitions matter.",
    "Lunch is at noon today.",
    "The staging cluster moved regions last night.",
)


def _turns() -> MemoryIndex:
    index = MemoryIndex()
    for n, text in enumerate(TURNS):
        index.add(memory(f"t{n}", text, session_id="s_old", turn_index=n))
    return index


def _scores(index: MemoryIndex) -> dict[str, float]:
    query = dict.fromkeys(tokenize(QUERY), 1.0)
    found = {}
    for key, score in index.lexical(WS, query, limit=50):
        item = index.memory(key)
        assert item is not None
        found[item.id] = score
    return found


def _summary() -> Memory:
    return memory(
        "summary",
        "Summary · message broker: Kafka picked for billing events over RabbitMQ; billing "
        "events need ordering per customer. Open: partitions for billing events?",
        session_id="s_old",
        scope="workspace",
        kind=MemoryKind.SUMMARY,
        status="Final",
        source_event_ids=tuple(f"e_t{n}" for n in range(3)),
    )


def _ownership(n: int) -> Memory:
    return memory(
        f"own_{n}",
        f"Ownership context: Owner u_1 owns this session scope (session s_{n}).",
        session_id=f"s_{n}",
        kind=MemoryKind.PROMOTED,
        extra={"memory_kind": "ownership_context", "origin": "system"},
    )


def _restatements() -> list[Memory]:
    recap = memory(
        "recap",
        "Recap: billing events go through Kafka, the message broker we picked.",
        session_id="s_old",
        kind=MemoryKind.RECAP,
        source_event_ids=("e_t0",),
    )
    record = memory(
        "record",
        "Decision · message broker: Kafka for billing events.",
        session_id=None,
        kind=MemoryKind.DECISION_RECORD,
        status="DecisionRecord",
        source_event_ids=("e_t0",),
    )
    return [_summary(), recap, record, *(_ownership(n) for n in range(6))]


def test_restatements_leave_every_turn_score_and_statistic_unchanged() -> None:
    index = _turns()
    before = _scores(index)
    frequencies = {term: index.doc_frequency(WS, term) for term in tokenize(QUERY)}
    for item in _restatements():
        index.add(item)
    after = _scores(index)
    assert {key: after[key] for key in before} == before
    assert {term: index.doc_frequency(WS, term) for term in frequencies} == frequencies
    # still searched, by the turns' statistics
    assert "summary" in after and "record" in after


def test_a_turn_said_again_does_count() -> None:
    # the same text as a turn moves the statistics: the rule is about what a memory is
    index = _turns()
    before = _scores(index)
    index.add(memory("again", _summary().text, session_id="s_new", turn_index=0))
    after = _scores(index)
    assert after["t0"] != before["t0"]


@pytest.mark.parametrize("memory_id", ["summary", "own_0"])
def test_removing_a_restatement_keeps_the_statistics(memory_id: str) -> None:
    index = _turns()
    frequencies = {term: index.doc_frequency(WS, term) for term in tokenize(QUERY)}
    for item in _restatements():
        index.add(item)
    assert index.remove(memory_id)
    index.add(memory("t_late", "Kafka consumers for billing events lag at night.", turn_index=9))
    grown = {term: index.doc_frequency(WS, term) for term in frequencies}
    late = set(tokenize("Kafka consumers for billing events lag at night."))
    # (df, documents): the new turn counts once, the removed restatement never did
    assert grown == {t: (df + (t in late), n + 1) for t, (df, n) in frequencies.items()}


def test_what_a_person_promoted_counts() -> None:
    item = memory("pref", "preference: Kafka for events", kind=MemoryKind.PROMOTED,
                  extra={"memory_kind": "preference", "origin": "promotion"})  # fmt: skip
    assert item.in_statistics
    assert not _ownership(1).in_statistics
    assert not _summary().in_statistics


def test_compaction_keeps_the_statistics() -> None:
    # removing most of a partition compacts it (its postings are rebuilt): the memories
    # outside the statistics that are left still do not count, the removed ones are gone
    index = _turns()
    frequencies = {term: index.doc_frequency(WS, term) for term in tokenize(QUERY)}
    many = [_ownership(n) for n in range(40)]
    for item in [*many, _summary()]:
        index.add(item)
    part = index._parts[WS]

    def restated() -> int:  # restatements' postings, removed ones until a rebuild
        return sum(p.ready() for p in part.restated_postings.values())

    counted = restated()
    for item in many:
        assert index.remove(item.id)
    assert part.dead_postings < sum(len(set(tokenize(m.text))) for m in many)  # compacted
    assert {term: index.doc_frequency(WS, term) for term in frequencies} == frequencies
    summary_terms = len(set(tokenize(_summary().text)))
    assert summary_terms <= restated() < counted
    assert summary_terms + part.dead_postings == restated()


def test_restatements_take_no_candidate_place_from_a_turn() -> None:
    # the lexical walk returns its `limit` best turns, and the restatements scoring among
    # them besides: six ownership contexts and a summary that say "billing" more often
    # than any turn do not push the turns out of the candidates
    index = _turns()
    for item in _restatements():
        index.add(item)
    query = dict.fromkeys(tokenize("billing session scope"), 1.0)
    hits = [index.memory(key) for key, _ in index.lexical(WS, query, limit=2)]
    turns = [m.id for m in hits if m is not None and m.in_statistics]
    others = [m.id for m in hits if m is not None and not m.in_statistics]
    assert sorted(turns) == ["t0", "t2"], [m.id for m in hits if m is not None]
    assert "summary" in others and len(others) > 1
