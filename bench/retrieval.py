"""Retrieval quality: ``python -m bench.retrieval``.

The dataset's turns go through the real pipeline: the embedded Redis and graph servers
are started, every turn is published with the :class:`~producers.publisher.Publisher`
(redaction, bounded Lua enqueue), ingested by the batching RQ worker (offline extractor,
graph writer), and a recall worker bootstraps its index from the graph; every question is
then asked through :class:`~producers.recall_client.RecallClient`, over Redis, to that
worker. Timestamps are shifted so the dataset's "now" is the moment of the run (the
worker ranks with the real clock).

The reference is a plain Okapi BM25 over the raw turns of the same workspace (lowercase
word tokens, no stemming, no stopwords, no context), in the same run. Reports Recall@5,
Recall@10 and MRR@10 of the evidence turns, for all questions and split into standalone
and follow-up questions.
"""

from __future__ import annotations

import logging
import math
import re
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import structlog

from bench.report import percentile, result_line, table
from bench.retrieval_data import DEFAULT_OUT, load
from producers.bounded_queue import is_ingested
from producers.recall_client import RecallClient
from schemas.recall import ConversationTurn
from schemas.turn_event import TurnEvent
from turngraph.app import build_ingest_worker, build_recall_worker
from turngraph.clients import Clients, build_clients, build_publisher, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.settings import Settings
from workers.recall.worker import RecallWorker

BENCH_SESSION = "bench_question_session"
"""Questions are asked from a new session that is not part of the dataset."""

Ranker = Callable[[dict[str, Any]], list[str]]


def shifted(turns: Sequence[TurnEvent], dataset_now: datetime) -> list[TurnEvent]:
    """The same turns, moved in time so that the dataset's "now" is this moment."""
    delta = datetime.now(UTC) - dataset_now
    return [turn.model_copy(update={"occurred_at": turn.occurred_at + delta}) for turn in turns]


@contextmanager
def pipeline_stack(turns: Sequence[TurnEvent]) -> Iterator[tuple[Clients, RecallWorker]]:
    """Embedded services with ``turns`` published, ingested and a recall worker serving."""
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(Path(tmp)) as endpoints:
        settings = with_endpoints(Settings(_env_file=None), endpoints)
        clients = build_clients(settings)
        with build_publisher(settings) as publisher:
            for turn in turns:
                publisher.publish(turn)
            if not publisher.flush(timeout_s=60):
                raise SystemExit("the publisher could not flush the dataset")
        build_ingest_worker(clients).work(burst=True, with_scheduler=False, logging_level="WARNING")
        missing = [t.event_id for t in turns if not is_ingested(clients.redis, t.event_id)]
        if missing:
            raise SystemExit(f"{len(missing)} turns were not ingested")
        recall = build_recall_worker(clients)
        recall.bootstrap()
        server = threading.Thread(target=recall.run, daemon=True)
        server.start()
        try:
            yield clients, recall
        finally:
            recall.stop()
            server.join(timeout=10)
            clients.close()


def recall_ranker(conn: redis.Redis, timings: list[float]) -> Ranker:
    client = RecallClient(conn, deadline_ms=5_000)

    def rank(question: dict[str, Any]) -> list[str]:
        started = time.perf_counter()
        response = client.recall(
            question["question"],
            workspace=question["workspace"],
            user=question["user"],
            session_id=BENCH_SESSION,
            conversation_context=[
                ConversationTurn(**turn) for turn in question["conversation_context"]
            ],
            max_results=10,
            max_tokens=100_000,
        )
        timings.append((time.perf_counter() - started) * 1000)
        if not response.success:
            raise SystemExit(f"recall failed: {response.error_code}")
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
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    dataset_turns, questions, dataset_now = load(data_dir)
    turns = shifted(dataset_turns, dataset_now)
    bm25 = PlainBM25(turns)
    timings: list[float] = []
    groups = {
        "all": questions,
        "standalone": [q for q in questions if not q["follow_up"]],
        "follow-up": [q for q in questions if q["follow_up"]],
    }
    with pipeline_stack(turns) as (clients, recall):
        systems: dict[str, Ranker] = {
            "recall through the pipeline": recall_ranker(clients.redis, timings),
            "bm25 raw turns (reference)": bm25.ranker(),
            "bm25 raw turns + context": bm25.ranker(with_context=True),
        }
        results = {
            (system, group): evaluate(ranker, qs)
            for system, ranker in systems.items()
            for group, qs in groups.items()
        }
        memories = len(recall.index)
    print(
        f"dataset: {len(turns)} turns, {len({t.session_id for t in turns})} sessions, "
        f"{len({t.workspace for t in turns})} workspaces, {len(questions)} questions "
        f"({len(groups['follow-up'])} follow-ups); recall index: {memories} memories"
    )
    rows = [
        [system, group, m["recall_at_5"], m["recall_at_10"], m["mrr"], len(groups[group])]
        for (system, group), m in results.items()
    ]
    print(table(["system", "questions", "R@5", "R@10", "MRR@10", "n"], rows))
    print(
        f"recall end to end over Redis: p50 {percentile(timings, 50):.3f} ms, "
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
            recall_p50_ms=round(percentile(timings, 50), 3),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else DEFAULT_OUT))
