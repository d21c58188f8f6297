"""Retrieval metrics and the reference ranker for ``bench.retrieval``.

The reference is Okapi BM25 over the raw turns of the same workspace with the *same*
analysis as recall (``workers.recall.text.tokenize``: stopwords, light stemming,
identifier splitting), so the gain reported is the ranking's, not the tokenizer's; a
second row appends the question's conversation context to the query.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.recall.text import tokenize

CUTOFFS = (5, 10, 25, 50)
"""Recall@k reported for each k."""

Ranker = Callable[[dict[str, Any]], list[str]]


class SameTokenizerBM25:
    """Okapi BM25 (k1=1.5, b=0.75, the rank-bm25 defaults) over raw turns, per workspace,
    with recall's own tokenizer and stopwords."""

    def __init__(self, turns: Sequence[TurnEvent], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs: dict[str, list[tuple[str, Counter[str], int]]] = {}
        self.df: dict[str, Counter[str]] = {}
        for turn in turns:
            terms = tokenize(turn.content)
            counts = Counter(terms)
            self.docs.setdefault(turn.workspace, []).append((turn.event_id, counts, len(terms)))
            self.df.setdefault(turn.workspace, Counter()).update(counts.keys())

    def ranker(self, with_context: bool = False) -> Ranker:
        def rank(question: dict[str, Any]) -> list[str]:
            text = question["question"]
            if with_context:
                text += " " + " ".join(t["content"] for t in question["conversation_context"])
            return self.rank(question["workspace"], text)[: max(CUTOFFS)]

        return rank

    def rank(self, workspace: str, query: str) -> list[str]:
        docs = self.docs.get(workspace, [])
        df = self.df.get(workspace, Counter())
        n = len(docs)
        avgdl = sum(length for _, _, length in docs) / max(n, 1)
        terms = tokenize(query)
        scores = []
        for event_id, counts, length in docs:
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                    norm = tf + self.k1 * (1 - self.b + self.b * length / max(avgdl, 1.0))
                    score += idf * tf * (self.k1 + 1) / norm
            if score > 0:
                scores.append((score, event_id))
        scores.sort(key=lambda item: item[0], reverse=True)
        return [event_id for _, event_id in scores]


def evaluate(ranker: Ranker, questions: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Mean Recall@k of the evidence turns for each k in CUTOFFS, and MRR@10."""
    hits: dict[int, list[float]] = {k: [] for k in CUTOFFS}
    rr: list[float] = []
    for question in questions:
        evidence = set(question["evidence_event_ids"])
        ranked = ranker(question)[: max(CUTOFFS)]
        for k in CUTOFFS:
            hits[k].append(len(evidence.intersection(ranked[:k])) / len(evidence))
        first = next((i for i, e in enumerate(ranked[:10], start=1) if e in evidence), None)
        rr.append(1 / first if first else 0.0)
    if not questions:
        return {**{f"r{k}": 0.0 for k in CUTOFFS}, "mrr": 0.0}
    return {**{f"r{k}": statistics.fmean(hits[k]) for k in CUTOFFS}, "mrr": statistics.fmean(rr)}
