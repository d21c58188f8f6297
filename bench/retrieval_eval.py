"""Retrieval metrics and the reference ranker for ``bench.retrieval``.

The reference is Okapi BM25 over the raw turns of the same workspace with the *same*
analysis as recall (``workers.recall.text.tokenize``: stopwords, light stemming,
identifier splitting) over exactly the text recall indexes (``speaker: text``), so the
gain reported is the ranking's, not the tokenizer's; a second row appends the question's
conversation context to the query. A question with a ``position`` (an online replay)
is ranked over the workspace's first ``position`` turns only: what was published before
it.
"""

from __future__ import annotations

import math
import statistics
from bisect import bisect_left
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate
from typing import Any

from turngraph.schemas.memory_block import render_memory_block
from turngraph.schemas.recall import RecallResult
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.embeddings.texts import speaker_text
from turngraph.workers.recall.text import estimate_tokens, tokenize

CUTOFFS = (5, 10, 25, 50)
"""Recall@k reported for each k."""

SESSION_HIT_AT = 10
"""Session hit@k: any evidence turn's session among the sessions of the top k turn ids."""

Ranker = Callable[[dict[str, Any]], list[str]]

INJECTED: Mapping[str, int] = {"max_results": 5, "max_tokens": 800}
"""What the prompt hook asks recall for (``producers/hooks/runner.py``): the block a
user's prompt gets is rendered from this answer."""


def question_key(question: Mapping[str, Any]) -> str:
    """One question's key in a run (its id, else its text in its workspace)."""
    return str(question.get("id") or f"{question['workspace']}\n{question['question']}")


def injection(results: Sequence[RecallResult]) -> tuple[tuple[str, ...], int]:
    """The first result's turns and the tokens of the ``<memory>`` block rendered from
    ``results`` (an answer to an ``INJECTED`` request; 0 when nothing is injected)."""
    block = render_memory_block(results)
    first = tuple(results[0].source_event_ids) if results else ()
    return first, estimate_tokens(block) if block else 0


def answer_first(
    questions: Sequence[dict[str, Any]], injected: Mapping[str, tuple[tuple[str, ...], int]]
) -> dict[str, float]:
    """Answer-at-1 (the first injected item holds an evidence turn) and the mean tokens
    injected per question, over ``questions`` (``injected``: by :func:`question_key`)."""
    firsts, tokens = [], []
    for question in questions:
        first, used = injected[question_key(question)]
        firsts.append(float(bool(set(question["evidence_event_ids"]).intersection(first))))
        tokens.append(float(used))
    if not questions:
        return {"a1": 0.0, "tokens": 0.0}
    return {"a1": statistics.fmean(firsts), "tokens": statistics.fmean(tokens)}


class _Workspace:
    """One workspace's turns in publication order, as postings (doc indices ascend)."""

    def __init__(self) -> None:
        self.ids: list[str] = []
        self.lengths: list[int] = []
        self.postings: dict[str, tuple[list[int], list[int]]] = {}
        self._prefix: list[int] = []

    def add(self, event_id: str, text: str) -> None:
        terms = tokenize(text)
        doc = len(self.ids)
        self.ids.append(event_id)
        self.lengths.append(len(terms))
        for term, tf in Counter(terms).items():
            docs, tfs = self.postings.setdefault(term, ([], []))
            docs.append(doc)
            tfs.append(tf)

    def total_length(self, n: int) -> int:
        if len(self._prefix) != len(self.lengths):
            self._prefix = list(accumulate(self.lengths))
        return self._prefix[n - 1] if n else 0


class SameTokenizerBM25:
    """Okapi BM25 (k1=1.5, b=0.75, the rank-bm25 defaults) over raw turns, per workspace,
    with recall's own tokenizer and stopwords, over ``speaker: text`` as recall indexes."""

    def __init__(self, turns: Sequence[TurnEvent], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.workspaces: dict[str, _Workspace] = {}
        for turn in turns:
            workspace = self.workspaces.setdefault(turn.workspace, _Workspace())
            workspace.add(turn.event_id, speaker_text(turn.content, turn.speaker or None))

    def ranker(self, with_context: bool = False) -> Ranker:
        def rank(question: dict[str, Any]) -> list[str]:
            text = question["question"]
            if with_context:
                text += " " + " ".join(t["content"] for t in question["conversation_context"])
            return self.rank(question["workspace"], text, question.get("position"))[: max(CUTOFFS)]

        return rank

    def rank(self, workspace: str, query: str, published: int | None = None) -> list[str]:
        """Turn ids best first, over the workspace's first ``published`` turns (all)."""
        ws = self.workspaces.get(workspace)
        if ws is None:
            return []
        n = len(ws.ids) if published is None else min(published, len(ws.ids))
        avgdl = max(ws.total_length(n) / max(n, 1), 1.0)
        scores: dict[int, float] = {}
        for term, weight in Counter(tokenize(query)).items():
            docs, tfs = ws.postings.get(term, ([], []))
            df = bisect_left(docs, n)
            if not df:
                continue
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            for doc, tf in zip(docs[:df], tfs[:df], strict=True):
                norm = tf + self.k1 * (1 - self.b + self.b * ws.lengths[doc] / avgdl)
                scores[doc] = scores.get(doc, 0.0) + weight * idf * tf * (self.k1 + 1) / norm
        best = sorted(scores, key=lambda doc: (-scores[doc], doc))
        return [ws.ids[doc] for doc in best]


def evaluate(
    ranker: Ranker,
    questions: Sequence[dict[str, Any]],
    session_of: Mapping[str, str] | None = None,
) -> dict[str, float]:
    """Mean Recall@k of the evidence turns for each k in CUTOFFS, MRR@10 and, with
    ``session_of`` (turn id -> session), session hit@10 (``s10``)."""
    hits: dict[int, list[float]] = {k: [] for k in CUTOFFS}
    rr: list[float] = []
    session_hits: list[float] = []
    for question in questions:
        evidence = set(question["evidence_event_ids"])
        ranked = ranker(question)[: max(CUTOFFS)]
        for k in CUTOFFS:
            hits[k].append(len(evidence.intersection(ranked[:k])) / len(evidence))
        first = next((i for i, e in enumerate(ranked[:10], start=1) if e in evidence), None)
        rr.append(1 / first if first else 0.0)
        if session_of is not None:
            wanted = {session_of.get(e) for e in evidence}
            found = {session_of.get(e) for e in ranked[:SESSION_HIT_AT]}
            session_hits.append(float(bool(wanted & found - {None})))
    if not questions:
        return {**{f"r{k}": 0.0 for k in CUTOFFS}, "mrr": 0.0, "s10": 0.0}
    metrics = {f"r{k}": statistics.fmean(hits[k]) for k in CUTOFFS}
    metrics["mrr"] = statistics.fmean(rr)
    metrics["s10"] = statistics.fmean(session_hits) if session_hits else float("nan")
    return metrics
