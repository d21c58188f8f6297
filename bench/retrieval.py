"""Retrieval quality: ``python -m bench.retrieval``.

Phase 1: builds the recall index directly from the dataset's turns (one episode memory
per turn, entities from the offline extractor when it is importable) and asks the 100+
questions through :func:`workers.recall.search.search`. The reference is a plain Okapi
BM25 over the raw turns of the same workspace (lowercase word tokens, no stemming, no
stopwords, no context), in the same run. Reports Recall@5, Recall@10 and MRR@10 of the
evidence turns, for all questions and split into standalone and follow-up questions.
"""

from __future__ import annotations

import math
import re
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from bench.report import percentile, result_line, table
from bench.retrieval_data import DEFAULT_OUT, load
from schemas.recall import ConversationTurn, RecallRequest
from schemas.turn_event import TurnEvent
from workers.recall.index import MemoryIndex
from workers.recall.memory import Memory, MemoryKind, normalise_entities
from workers.recall.search import search

BENCH_SESSION = "bench_question_session"
"""Questions are asked from a new session that is not part of the dataset."""

Ranker = Callable[[dict[str, Any]], list[str]]


def entity_names(turns: Sequence[TurnEvent]) -> tuple[dict[str, list[str]], str]:
    """Entities per event id from the project's extractor (offline: no LLM in this bench)."""
    try:
        from turngraph.settings import Settings
        from workers.extraction.factory import build_extractor

        settings = Settings(_env_file=None)
        extractor, label = build_extractor(settings, None), "offline"
    except ImportError:
        return {}, "none"
    names: dict[str, list[str]] = {}
    for extraction in extractor.extract(list(turns)):
        names[extraction.event_id] = [e.name for e in extraction.entities]
    return names, label


def build_index(turns: Sequence[TurnEvent], entities: dict[str, list[str]]) -> MemoryIndex:
    index = MemoryIndex()
    for turn in turns:
        index.add(
            Memory(
                id=turn.event_id,
                text=turn.content,
                kind=MemoryKind.EPISODE,
                scope="session",
                created_at=turn.occurred_at,
                source_created_at=turn.occurred_at,
                source_event_ids=(turn.event_id,),
                session_id=turn.session_id,
                workspace=turn.workspace,
                user=turn.user,
                entities=normalise_entities(entities.get(turn.event_id, ())),
                turn_index=turn.turn_index,
            )
        )
    return index


def recall_ranker(index: MemoryIndex, now: datetime, timings: list[float]) -> Ranker:
    def rank(question: dict[str, Any]) -> list[str]:
        request = RecallRequest(
            query=question["question"],
            workspace=question["workspace"],
            user=question["user"],
            session_id=BENCH_SESSION,
            conversation_context=tuple(
                ConversationTurn(**turn) for turn in question["conversation_context"]
            ),
            max_results=10,
            max_tokens=100_000,
        )
        started = time.perf_counter()
        response = search(index, request, now)
        timings.append((time.perf_counter() - started) * 1000)
        ranked: list[str] = []
        for result in response.results:
            ranked += [e for e in result.source_event_ids if e not in ranked]
        return ranked

    return rank


_PLAIN = re.compile(r"\w+")


class PlainBM25:
    """Okapi BM25 (k1=1.5, b=0.75, the rank-bm25 defaults) over raw turns, per workspace."""

    def __init__(self, turns: Sequence[TurnEvent], k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.docs: dict[str, list[tuple[str, Counter[str], int]]] = {}
        for turn in turns:
            words = _PLAIN.findall(turn.content.lower())
            self.docs.setdefault(turn.workspace, []).append(
                (turn.event_id, Counter(words), len(words))
            )

    def ranker(self, with_context: bool = False) -> Ranker:
        def rank(question: dict[str, Any]) -> list[str]:
            text = question["question"]
            if with_context:
                text += " " + " ".join(t["content"] for t in question["conversation_context"])
            return self.rank(question["workspace"], text)[:10]

        return rank

    def rank(self, workspace: str, query: str) -> list[str]:
        docs = self.docs.get(workspace, [])
        n = len(docs)
        avgdl = sum(length for _, _, length in docs) / max(n, 1)
        terms = _PLAIN.findall(query.lower())
        df = {t: sum(1 for _, counts, _ in docs if t in counts) for t in set(terms)}
        scores = []
        for event_id, counts, length in docs:
            score = 0.0
            for term in terms:
                tf = counts.get(term, 0)
                if tf:
                    idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                    norm = tf + self.k1 * (1 - self.b + self.b * length / avgdl)
                    score += idf * tf * (self.k1 + 1) / norm
            if score > 0:
                scores.append((score, event_id))
        scores.sort(reverse=True)
        return [event_id for _, event_id in scores]


def evaluate(ranker: Ranker, questions: Sequence[dict[str, Any]]) -> dict[str, float]:
    r5, r10, rr = [], [], []
    for question in questions:
        evidence = set(question["evidence_event_ids"])
        ranked = ranker(question)[:10]
        r5.append(len(evidence.intersection(ranked[:5])) / len(evidence))
        r10.append(len(evidence.intersection(ranked)) / len(evidence))
        first = next((i for i, e in enumerate(ranked, start=1) if e in evidence), None)
        rr.append(1 / first if first else 0.0)
    return {
        "recall_at_5": statistics.fmean(r5),
        "recall_at_10": statistics.fmean(r10),
        "mrr": statistics.fmean(rr),
    }


def main(data_dir: Path = DEFAULT_OUT) -> int:
    turns, questions, now = load(data_dir)
    entities, extractor = entity_names(turns)
    index = build_index(turns, entities)
    no_entities = build_index(turns, {})
    bm25 = PlainBM25(turns)
    timings: list[float] = []
    systems: dict[str, Ranker] = {
        f"recall (entities: {extractor})": recall_ranker(index, now, timings),
        "recall (entities: none)": recall_ranker(no_entities, now, []),
        "bm25 raw turns (reference)": bm25.ranker(),
        "bm25 raw turns + context": bm25.ranker(with_context=True),
    }
    groups = {
        "all": questions,
        "standalone": [q for q in questions if not q["follow_up"]],
        "follow-up": [q for q in questions if q["follow_up"]],
    }
    results = {
        (system, group): evaluate(ranker, qs)
        for system, ranker in systems.items()
        for group, qs in groups.items()
    }
    print(
        f"dataset: {len(turns)} turns, {len({t.session_id for t in turns})} sessions, "
        f"{len({t.workspace for t in turns})} workspaces, {len(questions)} questions "
        f"({len(groups['follow-up'])} follow-ups); extractor: {extractor}"
    )
    rows = [
        [system, group, m["recall_at_5"], m["recall_at_10"], m["mrr"], len(groups[group])]
        for (system, group), m in results.items()
    ]
    print(table(["system", "questions", "R@5", "R@10", "MRR@10", "n"], rows))
    print(
        f"in-process search over {len(index)} memories: p50 {percentile(timings, 50):.3f} ms, "
        f"p95 {percentile(timings, 95):.3f} ms"
    )
    ours = results[(next(iter(systems)), "all")]
    ours_follow = results[(next(iter(systems)), "follow-up")]
    reference = results[("bm25 raw turns (reference)", "all")]
    print(
        result_line(
            "retrieval",
            recall_at_5=round(ours["recall_at_5"], 3),
            recall_at_10=round(ours["recall_at_10"], 3),
            mrr=round(ours["mrr"], 3),
            followup_recall_at_10=round(ours_follow["recall_at_10"], 3),
            bm25_recall_at_5=round(reference["recall_at_5"], 3),
            bm25_recall_at_10=round(reference["recall_at_10"], 3),
            bm25_mrr=round(reference["mrr"], 3),
            questions=len(questions),
            search_p50_ms=round(percentile(timings, 50), 3),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
