"""BM25 over one partition's postings (see ``index``): the bounded walk that finds lexical
candidates, and the binary-search scoring of given memories.

``alive`` is the index's live-id mapping: removed ids linger in the postings until the
partition is compacted, and are skipped here.
"""

from __future__ import annotations

import heapq
from bisect import bisect_left
from collections.abc import Callable, Container, Iterable, Mapping
from operator import itemgetter

from turngraph.workers.recall.postings import Hit, Partition, Postings, idf
from turngraph.workers.recall.ranking import Ranking


def walk(
    part: Partition,
    query: Mapping[str, float],
    alive: Container[int],
    limit: int,
    ranking: Ranking,
    restates: Callable[[int], bool] = lambda _: False,
) -> list[Hit]:
    """The ``limit`` best memories for ``query`` (term -> weight), best first, and the
    restatements (``restates``: outside the statistics, ``Memory.in_statistics``) that
    score among them: a digest takes no candidate place from a turn.

    Terms are walked rarest first, newest postings first, within the ranking's ``postings_budget``;
    terms too common for what is left only rescore the best candidates found so far.
    """
    found = [(p.ready(), term, p) for term in query if (p := part.postings.get(term)) is not None]
    found.sort(key=itemgetter(0))
    acc: dict[int, float] = {}
    budget = ranking.postings_budget
    late: list[tuple[float, Postings]] = []
    for df, term, postings in found:
        weight = idf(part.n_docs, part.doc_frequency(term, postings)) * query[term]
        if df > budget and acc:
            late.append((weight, postings))
            continue
        start = max(0, df - budget)
        budget -= df - start
        get = acc.get
        for internal, w in zip(postings.ids[start:df], postings.weights[start:df], strict=True):
            acc[internal] = get(internal, 0.0) + weight * w
    if late:
        acc = dict(heapq.nlargest(ranking.rescore_candidates, acc.items(), key=itemgetter(1)))
        for weight, postings in late:
            ids, weights, n = postings.ids, postings.weights, postings.ready()
            for internal in acc:
                i = bisect_left(ids, internal, 0, n)
                if i < n and ids[i] == internal:
                    acc[internal] += weight * weights[i]
    best = heapq.nlargest(2 * limit + 8, acc.items(), key=itemgetter(1))
    hits: list[Hit] = []
    places = 0
    for hit in best:
        if hit[0] not in alive:
            continue
        if not restates(hit[0]):
            if places == limit:
                break
            places += 1
        hits.append(hit)
    return hits


def score_members(
    part: Partition,
    query: Mapping[str, float],
    members: Iterable[int],
    alive: Container[int],
    limit: int | None,
) -> list[Hit]:
    """BM25 of ``query`` for the given memories only (no postings walk); the ``limit``
    best first, or every memory that matched (in ``members`` order) when ``None``."""
    terms = []
    for term, q in query.items():
        postings = part.postings.get(term)
        if postings is not None:
            terms.append((idf(part.n_docs, part.doc_frequency(term, postings)) * q, postings))
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
    return heapq.nlargest(limit, acc.items(), key=itemgetter(1))
