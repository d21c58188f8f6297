"""``bm25.walk`` sums the walked postings in numpy: the same hits, to the last bit, as a
dict of running sums (the walk before, kept here as the reference)."""

from __future__ import annotations

import heapq
import random
from bisect import bisect_left
from dataclasses import replace
from operator import itemgetter

from hypothesis import given, settings
from hypothesis import strategies as st

from turngraph.workers.recall.bm25 import walk
from turngraph.workers.recall.postings import Hit, Partition, Postings, idf
from turngraph.workers.recall.ranking import DEFAULT, Ranking


def _reference(
    part: Partition, query: dict[str, float], alive: set[int], limit: int, ranking: Ranking
) -> list[Hit]:
    """The walk with a dict of running sums (restatements left out)."""
    weights = {
        t: idf(part.n_docs, p.ready()) * query[t] for t in query if (p := part.postings.get(t))
    }
    found = sorted(
        ((p.ready(), t, p) for t in query if (p := part.postings.get(t)) is not None),
        key=itemgetter(0),
    )
    acc: dict[int, float] = {}
    budget = ranking.postings_budget
    late = []
    for df, term, postings in found:
        weight = weights[term]
        if df > budget and acc:
            late.append((weight, postings))
            continue
        start = max(0, df - budget)
        budget -= df - start
        for internal, w in zip(postings.ids[start:df], postings.weights[start:df], strict=True):
            acc[internal] = acc.get(internal, 0.0) + weight * w
    if late:
        acc = dict(heapq.nlargest(ranking.rescore_candidates, acc.items(), key=itemgetter(1)))
        for weight, postings in late:
            for internal in acc:
                i = bisect_left(postings.ids, internal, 0, postings.ready())
                if i < postings.ready() and postings.ids[i] == internal:
                    acc[internal] += weight * postings.weights[i]
    best = heapq.nlargest(2 * limit + 8, acc.items(), key=itemgetter(1))
    return [hit for hit in best if hit[0] in alive][:limit]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(0, 2**32),
    st.integers(1, 2_000),
    st.integers(1, 8),
    st.integers(20, 800),
    st.integers(1, 5),
)
def test_the_walk_is_the_running_sums_walk(
    seed: int, docs: int, terms: int, budget: int, levels: int
) -> None:
    rng = random.Random(seed)  # few distinct weights: many equal sums, ties in walk order
    part = Partition(n_docs=docs)
    size = rng.randrange(1, docs + 1)  # terms of one df: one idf, so sums tie across terms
    for t in range(terms):
        postings = Postings()
        held = size if rng.random() < 0.7 else rng.randrange(1, docs + 1)
        for internal in sorted(rng.sample(range(docs), held)):
            postings.append(internal, 1, rng.randrange(1, levels + 1) / 3)
        part.postings[f"t{t}"] = postings
    query = {f"t{t}": rng.choice((0.5, 1.0, 1.0, 1.0)) for t in range(terms)}
    query["unheard"] = 1.0
    alive = {i for i in range(docs) if rng.random() > 0.1}
    ranking = replace(DEFAULT, postings_budget=budget, rescore_candidates=rng.randrange(5, 120))
    limit = rng.randrange(1, 80)
    assert walk(part, query, alive, limit, ranking) == _reference(
        part, query, alive, limit, ranking
    )


def test_no_posting_walked_finds_nothing() -> None:
    assert walk(Partition(n_docs=3), {"absent": 1.0}, {0, 1, 2}, 10, DEFAULT) == []
