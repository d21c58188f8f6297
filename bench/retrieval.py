"""Retrieval quality: ``python -m bench.retrieval [--split dev|test|all] [--embedding none]
[--realmem [--distill off] [--max-questions N] [--capture FILE | --from-capture FILE]]``.

The dataset's turns go through the real pipeline: the embedded Redis and graph servers
are started, every turn is published with the :class:`~producers.publisher.Publisher`
(redaction, bounded Lua enqueue), ingested by the batching RQ worker (offline extractor,
graph writer), and a recall worker bootstraps its index from the graph; every question is
then asked through :class:`~producers.recall_client.RecallClient`, over Redis, to that
worker. Timestamps are shifted so the dataset's "now" is the moment of the run (the
worker ranks with the real clock).

Datasets, each split into a development part (tuned on) and a test part (scored only
when a change is done): the project's own (``tests/data/retrieval``, split by scenario,
``bench.retrieval_split``) and REALTALK (ten real multi-week chats read from
``../shared/data/realtalk``, never copied here; odd chats dev, even chats test), the
latter twice: with the turns at their real dates and with one timestamp for all.
REALTALK was scored at every step of the recall work before issue 20: both its parts are
development data now, reported as ``realtalk … dev`` / ``realtalk … test`` (its split)
but tuned on, all of them.

``--realmem``: the editor's flow instead (``bench.retrieval_realmem``: five user <->
assistant histories, questions asked inside later sessions with the session's recent
turns as context), replayed online through the pipeline (``bench.retrieval_replay``)
with the product's defaults (distilled memories on; ``--distill off`` for the turns
alone); Recall@k and session hit@10 overall, per category and per session type, each
with its question count, with and without the context, against the same-tokenizer BM25
over the turns published before each question (and with the context appended). Split:
three personas to tune on (``dev``), two scored only when a change is done (``test``).
``--capture FILE`` keeps the replayed store and the requests; ``--from-capture FILE``
re-runs only the questions against it, in process (``bench.retrieval_capture``).

The reference is Okapi BM25 over the raw turns of the same workspace with recall's own
tokenizer and stopwords, plus a row with the conversation context appended to the query,
in the same run (``bench.retrieval_eval``). Reports Recall@5/10/25/50 and MRR@10 of the
evidence turns per dataset, split, and question category; the RESULT line gives the
gain at R@10 over the stronger of the two references.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import redis
import structlog

from bench.report import percentile, result_line, table
from bench.retrieval_capture import Rerun, rerun
from bench.retrieval_data import DEFAULT_OUT, load
from bench.retrieval_eval import (
    CUTOFFS,
    INJECTED,
    Ranker,
    SameTokenizerBM25,
    answer_first,
    evaluate,
    injection,
    question_key,
)
from bench.retrieval_realmem import load as load_realmem
from bench.retrieval_realtalk import RealTalk
from bench.retrieval_realtalk import load as load_realtalk
from bench.retrieval_replay import Replay, replay
from bench.retrieval_split import own_split
from turngraph.app import build_embedder, build_recall_worker, ingest_burst
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.producers.bounded_queue import is_ingested
from turngraph.producers.connection import open_publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.recall import ConversationTurn, RecallResponse
from turngraph.schemas.turn_event import TurnEvent
from turngraph.settings import Settings
from turngraph.workers.recall.ranking import Ranking, preset
from turngraph.workers.recall.worker import RecallWorker

BENCH_SESSION = "bench_question_session"

PUBLISH_CHUNK = 2_000
"""Turns published between flushes (the publisher's own buffer holds 10,000)."""
"""Questions are asked from a new session that is not part of the dataset."""


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
        with open_publisher(settings) as publisher:
            for start in range(0, len(turns), PUBLISH_CHUNK):
                for turn in turns[start : start + PUBLISH_CHUNK]:
                    publisher.publish(turn)
                if not publisher.flush(timeout_s=60):
                    raise SystemExit("the publisher could not flush the dataset")
        ingest_burst(clients)
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


def recall_ranker(
    conn: redis.Redis,
    timings: list[float],
    injected: dict[str, tuple[tuple[str, ...], int]] | None = None,
) -> Ranker:
    """Ranks a question's turns through Redis; with ``injected``, also asks as the prompt
    hook does and keeps what its block would hold (``retrieval_eval.injection``)."""
    client = RecallClient(conn, deadline_ms=5_000)

    def ask(question: dict[str, Any], **limits: int) -> RecallResponse:
        response = client.recall(
            question["question"],
            workspace=question["workspace"],
            user=question["user"],
            session_id=BENCH_SESSION,
            conversation_context=[
                ConversationTurn(**turn) for turn in question["conversation_context"]
            ],
            **limits,  # type: ignore[arg-type]
        )
        if not response.success:
            raise SystemExit(f"recall failed: {response.error_code}")
        return response

    def rank(question: dict[str, Any]) -> list[str]:
        started = time.perf_counter()
        response = ask(question, max_results=max(CUTOFFS), max_tokens=100_000)
        timings.append((time.perf_counter() - started) * 1000)
        if injected is not None:
            injected[question_key(question)] = injection(ask(question, **INJECTED).results)
        ranked: list[str] = []
        for result in response.results:
            ranked += [e for e in result.source_event_ids if e not in ranked]
        return ranked

    return rank


REFERENCES = ("bm25 same tokenizer", "bm25 same tokenizer + context")


def _groups(questions: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    groups: dict[str, list[dict[str, Any]]] = {"all": list(questions)}
    for question in questions:
        kind = question.get("category") or ("follow-up" if question["follow_up"] else "standalone")
        groups.setdefault(kind, []).append(question)
    return groups


def run_realmem(
    split: str,
    distill: bool,
    max_questions: int | None,
    capture: Path | None = None,
    from_capture: Path | None = None,
    ranking: Ranking | None = None,
) -> int:
    """The editor's flow on RealMem (module docstring), one table and one RESULT line."""
    rm = load_realmem(split=split)
    questions = rm.questions
    if max_questions is not None:  # a smoke run: the first questions of each persona
        kept: dict[str, int] = {}
        questions = [
            q for q in questions
            if (kept := kept | {q["workspace"]: kept.get(q["workspace"], 0) + 1})[q["workspace"]]
            <= max_questions
        ]  # fmt: skip
    started = time.perf_counter()
    run: Replay | Rerun
    if from_capture is not None:
        settings = Settings(_env_file=None)
        run = rerun(
            from_capture,
            build_embedder(settings),
            {q["id"] for q in questions},
            ranking or preset(settings.recall_ranking),
        )
        distill = bool(run.meta.get("distill"))
        missing = [q["id"] for q in questions if q["id"] not in run.with_context]
        if missing:
            raise SystemExit(f"{len(missing)} questions are not in {from_capture}: replay again")
    else:
        run = replay(rm.turns, questions, distill=distill, capture=capture)
    elapsed = time.perf_counter() - started
    recaps = run.recaps if isinstance(run, Replay) else int(run.meta.get("recaps", 0))
    how = (
        f"re-run from the capture {from_capture.name} in {elapsed:.0f} s (in process; "
        f"{run.same_as_replay} of {2 * len(questions)} answers identical to the replay's, "
        f"{run.degraded} degraded)"
        if isinstance(run, Rerun) and from_capture is not None
        else f"replay {elapsed:.0f} s"
    )
    bm25 = SameTokenizerBM25(rm.turns)
    systems: dict[str, Ranker] = {
        "recall, context": lambda q: run.with_context[q["id"]],
        "recall, no context": lambda q: run.without_context[q["id"]],
        REFERENCES[0]: bm25.ranker(),
        REFERENCES[1]: bm25.ranker(with_context=True),
    }
    groups: dict[str, list[dict[str, Any]]] = {}
    for question in questions:
        for group in (f"{question['split']} all", f"{question['split']} {question['category']}",
                      f"{question['split']} {question['session_type']}"):  # fmt: skip
            groups.setdefault(group, []).append(question)
    rows = []
    results: dict[tuple[str, str], dict[str, float]] = {}
    for group in sorted(groups, key=lambda g: (g.split()[0], not g.endswith(" all"), g)):
        for system, ranker in systems.items():
            m = evaluate(ranker, groups[group], rm.session_of)
            results[(group, system)] = m
            rows.append([f"realmem {group}", system, *(m[f"r{k}"] for k in CUTOFFS), m["s10"],
                         len(groups[group])])  # fmt: skip
    print(
        f"RealMem: {len(rm.turns)} turns, {len(questions)} questions asked online "
        f"({rm.questions_dropped} dropped without evidence; evidence resolved "
        f"{rm.evidence_resolved} of {rm.evidence_total}, {rm.evidence_unpublished} not yet "
        f"published at its question dropped; {rm.sessions_clamped} sessions moved later to "
        f"keep time monotonic); distilled memories {'on' if distill else 'off'}: "
        f"{recaps} recaps made at session start; recall index at the end: "
        f"{run.memories} memories {dict(sorted(run.kinds.items()))}, embedding model "
        f"{run.model}; {how}"
    )
    print(table(["dataset split questions", "system", *(f"R@{k}" for k in CUTOFFS),
                 "session hit@10", "n"], rows))  # fmt: skip
    print(
        f"recall {'in process' if from_capture else 'end to end over Redis'}: "
        f"p50 {percentile(run.timings_ms, 50):.3f} ms, "
        f"p95 {percentile(run.timings_ms, 95):.3f} ms"
    )
    summary: dict[str, float | int | str] = {
        "dataset": "realmem",
        "run": "capture" if from_capture else "replay",
        "distill": "on" if distill else "off",
        "embedding": run.model,
    }
    for part in sorted({q["split"] for q in questions}):
        group = f"{part} all"
        ours = results[(group, "recall, context")]
        bare = results[(group, "recall, no context")]
        refs = [results[(group, ref)] for ref in REFERENCES]
        summary[f"{part}_n"] = len(groups[group])
        summary[f"{part}_r10"] = round(ours["r10"], 3)
        summary[f"{part}_s10"] = round(ours["s10"], 3)
        summary[f"{part}_no_context_r10"] = round(bare["r10"], 3)
        summary[f"{part}_no_context_s10"] = round(bare["s10"], 3)
        summary[f"{part}_bm25_r10"] = round(max(r["r10"] for r in refs), 3)
        summary[f"{part}_bm25_s10"] = round(max(r["s10"] for r in refs), 3)
        summary[f"{part}_gain_r10_points"] = round(
            100 * (ours["r10"] - max(r["r10"] for r in refs)), 1
        )
        summary[f"{part}_gain_s10_points"] = round(
            100 * (ours["s10"] - max(r["s10"] for r in refs)), 1
        )
    summary["recall_p50_ms"] = round(percentile(run.timings_ms, 50), 3)
    print(result_line("retrieval", **summary))
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval")
    parser.add_argument("--split", choices=("dev", "test", "all"), default="all")
    parser.add_argument("--data", type=Path, default=DEFAULT_OUT)
    parser.add_argument(
        "--embedding",
        choices=("local", "openai", "none"),
        help="recall's embedding provider (default: the settings', the local model)",
    )
    parser.add_argument("--realmem", action="store_true", help="the editor's flow (RealMem)")
    parser.add_argument("--distill", choices=("on", "off"), default="on")
    parser.add_argument("--max-questions", type=int, help="per persona (a smoke run)")
    parser.add_argument(
        "--capture", type=Path, help="--realmem: keep the replayed store and requests here"
    )
    parser.add_argument(
        "--from-capture",
        type=Path,
        help="--realmem: re-run the questions against a kept store (bench.retrieval_capture)",
    )
    parser.add_argument(
        "--set",
        dest="overrides",
        help="--from-capture: the ranking preset with settings changed (bm25_b=0.75,…)",
    )
    args = parser.parse_args(argv)
    if args.embedding:  # the recall worker reads its settings from the environment
        os.environ["TURNGRAPH_EMBEDDING_PROVIDER"] = args.embedding
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    if args.realmem:
        return run_realmem(
            args.split,
            args.distill == "on",
            args.max_questions,
            args.capture,
            args.from_capture,
            Ranking.parse(args.overrides) if args.overrides else None,
        )
    now = datetime.now(UTC)
    dataset_turns, own_questions, dataset_now = load(args.data)
    own_turns = shifted(dataset_turns, dataset_now)
    for question in own_questions:
        question["split"] = own_split(question)
    realtalk: dict[str, RealTalk] = {
        "realtalk dates": load_realtalk(one_timestamp=False, now=now),
        "realtalk 1-ts": load_realtalk(one_timestamp=True, now=now),
    }
    datasets: dict[str, tuple[list[TurnEvent], list[dict[str, Any]]]] = {
        "own": (own_turns, own_questions),
        **{name: (rt.turns, rt.questions) for name, rt in realtalk.items()},
    }
    splits = ("dev", "test") if args.split == "all" else (args.split,)
    all_turns = [turn for turns, _ in datasets.values() for turn in turns]
    bm25 = SameTokenizerBM25(all_turns)
    timings: list[float] = []
    results: dict[tuple[str, str, str, str], dict[str, float]] = {}
    sizes: dict[tuple[str, str, str], int] = {}
    injected: dict[str, tuple[tuple[str, ...], int]] = {}
    ours = "recall through the pipeline"
    with pipeline_stack(all_turns) as (clients, recall):
        systems: dict[str, Ranker] = {
            ours: recall_ranker(clients.redis, timings, injected),
            REFERENCES[0]: bm25.ranker(),
            REFERENCES[1]: bm25.ranker(with_context=True),
        }
        for name, (_, questions) in datasets.items():
            for split in splits:
                for group, qs in _groups([q for q in questions if q["split"] == split]).items():
                    sizes[(name, split, group)] = len(qs)
                    for system, ranker in systems.items():
                        results[(name, split, group, system)] = evaluate(ranker, qs)
                        if system == ours:
                            results[(name, split, group, system)] |= answer_first(qs, injected)
        memories = len(recall.index)
        semantic = recall.index.semantic
        model = semantic.model if semantic is not None else "none"
    rt = realtalk["realtalk dates"]
    print(
        f"{len(all_turns)} turns ingested through the pipeline; recall index: {memories} "
        f"memories, embedding model: {model}. REALTALK (development data: both halves "
        f"were tuned on before issue 20; 'dev'/'test' are its old labels): {len(rt.turns)} turns, "
        f"{len(rt.questions)} questions "
        f"({rt.questions_dropped} without a resolvable evidence id dropped); evidence ids "
        f"resolved {rt.evidence_resolved} of {rt.evidence_total}"
    )
    rows = [
        [f"{name} {split} {group}", system, *(m[f"r{k}"] for k in CUTOFFS), m["mrr"],
         m.get("a1", ""), m.get("tokens", ""), sizes[(name, split, group)]]
        for (name, split, group, system), m in results.items()
    ]  # fmt: skip
    print(table(["dataset split questions", "system", *(f"R@{k}" for k in CUTOFFS),
                 "MRR@10", "answer@1", "tokens injected", "n"], rows))  # fmt: skip
    print(
        f"recall end to end over Redis: p50 {percentile(timings, 50):.3f} ms, "
        f"p95 {percentile(timings, 95):.3f} ms"
    )
    summary: dict[str, float | int | str] = {"embedding": model}
    for name in datasets:
        for split in splits:
            key = f"{name.replace(' ', '_').replace('-', '')}_{split}"
            mine = results[(name, split, "all", ours)]["r10"]
            refs = [results[(name, split, "all", ref)]["r10"] for ref in REFERENCES]
            summary[f"{key}_r10"] = round(mine, 3)
            summary[f"{key}_answer_at_1"] = round(results[(name, split, "all", ours)]["a1"], 3)
            summary[f"{key}_tokens_injected"] = round(
                results[(name, split, "all", ours)]["tokens"], 1
            )
            summary[f"{key}_bm25_r10"] = round(max(refs), 3)
            summary[f"{key}_gain_points"] = round(100 * (mine - max(refs)), 1)
    summary["realtalk"] = "development"
    summary["evidence_resolved"] = rt.evidence_resolved
    summary["evidence_total"] = rt.evidence_total
    summary["recall_p50_ms"] = round(percentile(timings, 50), 3)
    print(result_line("retrieval", **summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
