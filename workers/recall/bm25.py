"""BM25 over one partition's postings (see ``index``): the bounded walk that finds lexical
candidates, and the binary-search scoring of given memories.

``alive`` is the index's live-id mapping: removed ids linger in the postings until the
partition is compacted, and are skipped here.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Container, Iterable, Mapping
from itertools import compress, islice
from operator import itemgetter
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from turngraph.workers.recall.postings import Hit, Partition, Postings, among_said, idf
from turngraph.workers.recall.ranking import Ranking

__all__ = ["largest", "score_members", "walk"]

BULK_FROM = 256
"""From this many scores, :func:`largest` selects in numpy (below, ``heapq`` is quicker)."""


def walk(
    part: Partition,
    query: Mapping[str, float],
    alive: Container[int],
    limit: int,
    ranking: Ranking,
) -> list[Hit]:
    """The ``limit`` best memories of what was said for ``query`` (term -> weight), best
    first, and the restatements (``Partition``) that score among them: a digest takes no
    candidate place from a turn, and the turns found are those of an index without
    restatements (their postings are walked apart, each within its own budget).

    Terms are walked rarest first, newest postings first, within the ranking's
    ``postings_budget``; terms too common for what is left only rescore the best
    candidates found so far.
    """
    weights = {
        term: idf(part.n_docs, part.doc_frequency(postings)) * query[term]
        for term in query
        if (postings := part.postings.get(term)) is not None
    }
    stated = _best(_accumulate(part.postings, query, weights, part, ranking), alive, limit)
    if not part.restated_postings:
        return stated
    digests = _accumulate(part.restated_postings, query, weights, part, ranking)
    return among_said(stated, _best(digests, alive, 2 * limit + 8), limit)


def _accumulate(
    columns: Mapping[str, Postings],
    query: Mapping[str, float],
    weights: Mapping[str, float],
    part: Partition,
    ranking: Ranking,
) -> _Sums:
    """BM25 scores over one set of postings (``weights``: the statistics' idf x query
    weight per term; a term only restatements hold gets the idf of a term nobody said),
    each memory once, in the order the walk first met it.

    The walked postings are summed in numpy, in the walk's order (``bincount`` adds each
    memory's contributions one after the other, as a dict of running sums did: the same
    sums to the last bit), instead of a Python loop over up to ``postings_budget``
    postings (docs/history.md)."""
    found = [(p.ready(), term, p) for term in query if (p := columns.get(term)) is not None]
    found.sort(key=itemgetter(0))
    ids: list[npt.NDArray[np.intc]] = []
    contributions: list[npt.NDArray[np.float64]] = []
    budget = ranking.postings_budget
    late: list[tuple[float, Postings]] = []
    for df, term, postings in found:
        weight = weights.get(term)
        if weight is None:
            weight = idf(part.n_docs, 0) * query[term]
        if df > budget and ids:
            late.append((weight, postings))
            continue
        start = max(0, df - budget)
        budget -= df - start
        if df > start:  # slices are copies: the writer may append to the columns meanwhile
            ids.append(np.frombuffer(postings.ids[start:df], dtype=np.intc))
            walked = np.frombuffer(postings.weights[start:df], dtype=np.float32)
            contributions.append(weight * walked.astype(np.float64))
    sums = _summed(ids, contributions)
    if late:
        acc = dict(sums.largest(ranking.rescore_candidates))
        for weight, postings in late:
            ids_of, weights_of, n = postings.ids, postings.weights, postings.ready()
            for internal in acc:
                i = bisect_left(ids_of, internal, 0, n)
                if i < n and ids_of[i] == internal:
                    acc[internal] += weight * weights_of[i]
        sums = _Sums(
            np.fromiter(acc, dtype=np.int64, count=len(acc)),
            np.fromiter(acc.values(), dtype=np.float64, count=len(acc)),
        )
    return sums


class _Sums(NamedTuple):
    """Memories and their scores, in the order they were first met."""

    keys: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]

    def largest(self, n: int) -> list[Hit]:
        """The ``n`` best, best first, equal scores in their order here (what
        :func:`largest` returns for the same scores as a dict)."""
        size = len(self.scores)
        if n <= 0 or size == 0:
            return []
        scores = self.scores
        if size <= n:
            order = np.argsort(-scores, kind="stable")
        else:
            picked = np.flatnonzero(_chosen(scores, n))
            order = picked[np.argsort(-scores[picked], kind="stable")]
        return list(zip(self.keys[order].tolist(), scores[order].tolist(), strict=True))


def _summed(ids: list[npt.NDArray[np.intc]], contributions: list[npt.NDArray[np.float64]]) -> _Sums:
    """Each id's contributions added in their order, ids in the order first seen."""
    if not ids:
        return _Sums(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))
    every = np.concatenate(ids)
    keys, first, inverse = np.unique(every, return_index=True, return_inverse=True)
    sums = np.bincount(inverse, weights=np.concatenate(contributions), minlength=len(keys))
    order = np.argsort(first)
    return _Sums(keys[order].astype(np.int64), sums[order].astype(np.float64, copy=False))


def _best(acc: _Sums, alive: Container[int], limit: int) -> list[Hit]:
    """The ``limit`` best live ones (removed ids linger: a few more are read; each asked
    about until ``limit`` are found, not all of them)."""
    best = acc.largest(2 * limit + 8)
    return list(islice((hit for hit in best if hit[0] in alive), max(0, limit)))


def score_members(
    part: Partition,
    query: Mapping[str, float],
    members: Iterable[int],
    alive: Container[int],
    limit: int | None,
) -> list[Hit]:
    """BM25 of ``query`` for the given memories only (no postings walk); the ``limit``
    best first, or every memory that matched (in ``members`` order) when ``None``. A
    member is found in the postings of what was said or in the restatements'."""
    terms = []
    for term, q in query.items():
        postings = part.postings.get(term)
        weight = idf(part.n_docs, part.doc_frequency(postings) if postings else 0) * q
        for columns in (postings, part.restated_postings.get(term)):
            if columns is not None:
                terms.append((weight, columns))
    acc: dict[int, float] = {}
    for internal in members:
        if internal not in alive:
            continue
        score = 0.0
        for weight, postings in terms:
            ids, n = postings.ids, postings.ready()
            i = bisect_left(ids, internal, 0, n)
            if i < n and ids[i] == internal:
                score += weight * postings.weights[i]
        if score > 0.0:
            acc[internal] = score
    if limit is None:
        return list(acc.items())
    return largest(acc, limit)


def largest(scores: Mapping[int, float], n: int) -> list[Hit]:
    """``heapq.nlargest(n, scores.items(), key=itemgetter(1))``, the same list (equal
    scores in insertion order), selected in numpy when there are many: the heap's Python
    loop over a few thousand postings' sums took ~0.1-0.2 ms a call."""
    size = len(scores)
    if size < BULK_FROM or n <= 0 or size <= n:
        return heapq.nlargest(n, scores.items(), key=itemgetter(1))
    values = np.fromiter(scores.values(), dtype=np.float64, count=size)
    chosen = _chosen(values, n)
    keys = list(compress(scores, chosen.tolist()))
    picked = values[chosen]
    order = np.argsort(-picked, kind="stable")
    return list(zip([keys[i] for i in order.tolist()], picked[order].tolist(), strict=True))


def _chosen(values: npt.NDArray[np.float64], n: int) -> npt.NDArray[np.bool_]:
    """Which of ``values`` are the ``n`` largest (``n`` < their count): of the scores equal
    to the n-th, the first ones, as ``heapq.nlargest`` keeps them."""
    size = len(values)
    nth = np.partition(values, size - n)[size - n]  # the n-th largest score
    chosen = values > nth
    ties = np.flatnonzero(values == nth)[: n - int(np.count_nonzero(chosen))]
    chosen[ties] = True
    return chosen
