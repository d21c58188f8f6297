"""``bm25.largest``: the heap's selection, in numpy for many scores (the same list)."""

from __future__ import annotations

import heapq
import random
from operator import itemgetter

from hypothesis import given
from hypothesis import strategies as st

from turngraph.workers.recall.bm25 import BULK_FROM, largest


@given(
    st.integers(0, 2**32),
    st.integers(BULK_FROM, 4 * BULK_FROM),
    st.integers(1, 2 * BULK_FROM),
    st.integers(1, 40),
)
def test_largest_is_the_heaps_selection_ties_in_insertion_order(
    seed: int, size: int, n: int, distinct: int
) -> None:
    rng = random.Random(seed)  # few distinct scores: many tie at the n-th place
    levels = [rng.random() * 10 for _ in range(distinct)]
    found = {rng.randrange(10**6): rng.choice(levels) for _ in range(size)}
    assert largest(found, n) == heapq.nlargest(n, found.items(), key=itemgetter(1))


def test_few_scores_go_through_the_heap() -> None:
    found = {key: float(key % 3) for key in range(10)}
    assert largest(found, 4) == [(2, 2.0), (5, 2.0), (8, 2.0), (1, 1.0)]
