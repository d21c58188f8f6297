"""Fast tuning loop on the development parts only: ``python -m bench.retrieval_tune``.

The index is built in process from the turns (offline extractor, the in-memory graph
store and its recallable-memory mapper, the same code the ingest worker runs), so a
change to ranking can be checked in seconds. Only the development questions are scored
here; ``bench.retrieval`` (the real pipeline) reports dev and test.

Options (``--help`` lists them): ``--lexical`` (no embedder), ``--model DIR`` (one model
folder instead of the shipped pair), ``--pair C,S`` (the pair's weights), ``--preset
NAME`` (a named ranking of ``workers/recall/ranking.py``, default ``default``), ``--set
name=value,…`` (that preset with settings changed, e.g. ``--set
bm25_b=0.75,chain_weight=0``), ``--quick`` (real dates only), ``--ann-min-rows N`` (HNSW
from N rows per partition instead of exact search, to measure its effect on ranking),
``--realmem`` (the RealMem development personas instead, replayed online: each query is
asked over the turns published before it, from inside its session with its context;
turns only, no distilled memories: those need the real pipeline), ``--no-context`` (ask
without the conversation context).

The ranking is one frozen :class:`~workers.recall.ranking.Ranking` passed to the index;
nothing here assigns module constants.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

import turngraph.schemas.ontology as ontology
from bench.report import table
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
from bench.retrieval_realtalk import load as load_realtalk
from bench.retrieval_split import own_split
from tests.support.memory_graph import InMemoryGraphStore
from turngraph.schemas.recall import ConversationTurn, RecallRequest, RecallResult
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.embeddings.factory import default_local_embedder, local_embedder
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.ranking import Ranking, preset
from turngraph.workers.recall.search import search

BENCH_SESSION = "bench_question_session"


def build_index(
    turns: Sequence[TurnEvent],
    embedder: Embedder | None = None,
    ranking: Ranking | None = None,
    ann_min_rows: int | None = None,
) -> MemoryIndex:
    store = InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )
    extractor = OfflineExtractor(ontology.ONTOLOGY)
    for start in range(0, len(turns), 500):
        chunk = list(turns[start : start + 500])
        store.write(list(zip(chunk, extractor.extract(chunk), strict=True)))
    index = MemoryIndex(embedder, ranking or preset("default"), ann_min_rows=ann_min_rows)
    index.add_many(Memory.from_record(record) for record in store.recallable_memories())
    return index


def index_ranker(
    index: MemoryIndex,
    now: datetime,
    injected: dict[str, tuple[tuple[str, ...], int]] | None = None,
    with_context: bool = True,
    **request: Any,
) -> Ranker:
    """Ranks a question's turns; with ``injected``, also asks as the prompt hook does and
    keeps what its block would hold (``retrieval_eval.injection``); ``with_context``
    False asks without the conversation's context."""

    def ask(question: dict[str, Any], **limits: Any) -> list[RecallResult]:
        return search(
            index,
            RecallRequest(
                query=question["question"],
                workspace=question["workspace"],
                user=question["user"],
                session_id=question.get("session_id", BENCH_SESSION),
                conversation_context=tuple(
                    ConversationTurn(**turn) for turn in question["conversation_context"]
                )
                if with_context
                else (),
                **limits,
                **request,
            ),
            now=now,
        ).results

    def rank(question: dict[str, Any]) -> list[str]:
        results = ask(question, max_results=50, max_tokens=100_000)
        if injected is not None:
            injected[question_key(question)] = injection(ask(question, **INJECTED))
        ranked: list[str] = []
        for result in results:
            ranked += [e for e in result.source_event_ids if e not in ranked]
        return ranked

    return rank


def _answer(ranked: dict[str, list[str]], question: dict[str, Any]) -> list[str]:
    return ranked[question["id"]]


def realmem_rows(
    embedder: Embedder | None,
    now: datetime,
    ranking: Ranking,
    ann_min_rows: int | None,
    with_context: bool = True,
) -> list[list[Any]]:
    """The RealMem development personas, replayed online in process (turns only)."""
    rm = load_realmem(now=now, split="dev")
    store = InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )
    extractor = OfflineExtractor(ontology.ONTOLOGY)
    for start in range(0, len(rm.turns), 500):
        chunk = rm.turns[start : start + 500]
        store.write(list(zip(chunk, extractor.extract(chunk), strict=True)))
    order = {turn.event_id: n for n, turn in enumerate(rm.turns)}
    by_workspace: dict[str, list[tuple[int, Memory]]] = {}
    for record in store.recallable_memories():
        memory = Memory.from_record(record)
        at = max(order.get(e, 0) for e in memory.source_event_ids)
        by_workspace.setdefault(memory.workspace or "", []).append((at, memory))
    first: dict[str, int] = {}
    for n, turn in enumerate(rm.turns):
        first.setdefault(turn.workspace, n)
    index = MemoryIndex(embedder, ranking, ann_min_rows=ann_min_rows)
    added = dict.fromkeys(by_workspace, 0)
    for memories in by_workspace.values():
        memories.sort(key=lambda item: item[0])
    injected: dict[str, tuple[tuple[str, ...], int]] = {}
    rankers = {"recall": index_ranker(index, now, injected, with_context)}

    def online(question: dict[str, Any]) -> list[str]:
        workspace = question["workspace"]
        limit = first[workspace] + question["position"]
        memories = by_workspace[workspace]
        start = added[workspace]
        end = start
        while end < len(memories) and memories[end][0] < limit:
            end += 1
        index.add_many(memory for _, memory in memories[start:end])
        added[workspace] = end
        return rankers["recall"](question)

    bm25 = SameTokenizerBM25(rm.turns)
    systems = {
        "recall": online,
        "bm25": bm25.ranker(),
        "bm25+ctx": bm25.ranker(with_context=True),
    }
    rows = []
    questions = sorted(rm.questions, key=lambda q: (q["workspace"], q["position"]))
    groups: dict[str, list[dict[str, Any]]] = {"all": questions}
    for question in questions:
        groups.setdefault(question["category"], []).append(question)
        groups.setdefault(question["session_type"], []).append(question)
    for system, ranker in systems.items():
        ranked = {q["id"]: ranker(q) for q in questions}
        for group, qs in groups.items():
            m = evaluate(partial(_answer, ranked), qs, rm.session_of)
            a = answer_first(qs, injected) if system == "recall" else {"a1": "", "tokens": ""}
            rows.append([f"realmem dev {group}", system, *(m[f"r{k}"] for k in CUTOFFS),
                         m["s10"], a["a1"], a["tokens"], len(qs)])  # fmt: skip
    return rows


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.retrieval_tune",
        description="Ranking on the development questions, indexed in process.",
    )
    parser.add_argument("--preset", default="default", help="a named ranking (ranking.py)")
    parser.add_argument("--set", dest="overrides", metavar="NAME=V,...",
                        help="the preset with these settings changed")  # fmt: skip
    parser.add_argument("--lexical", action="store_true", help="no embedder")
    parser.add_argument("--model", type=Path, metavar="DIR", help="one model2vec folder")
    parser.add_argument("--pair", metavar="C,S", help="the shipped pair's two weights")
    parser.add_argument("--ann-min-rows", type=int, metavar="N",
                        help="HNSW from N rows per partition instead of exact search")  # fmt: skip
    parser.add_argument("--quick", action="store_true", help="REALTALK at real dates only")
    parser.add_argument("--realmem", action="store_true", help="the RealMem dev personas")
    parser.add_argument("--no-context", action="store_true",
                        help="ask without the conversation's context")  # fmt: skip
    return parser.parse_args(argv)


def ranking_from(args: argparse.Namespace) -> Ranking:
    """``--preset NAME`` with ``--set name=value,…`` applied."""
    ranking = preset(args.preset)
    return Ranking.parse(args.overrides, ranking) if args.overrides else ranking


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    ranking = ranking_from(args)
    ann_min_rows = args.ann_min_rows
    embedder: Embedder | None = None if args.lexical else default_local_embedder()
    if args.pair is not None:  # --pair 1.0,0.5: contextual and static weights of the pair
        contextual, static = (float(w) for w in args.pair.split(","))
        embedder = default_local_embedder(contextual_weight=contextual, static_weight=static)
    if args.model is not None:  # another model2vec folder
        embedder = local_embedder(args.model)
    print(f"ranking: {ranking}", file=sys.stderr)
    now = datetime.now(UTC)
    if args.realmem:
        rows = realmem_rows(embedder, now, ranking, ann_min_rows, not args.no_context)
        print(table(["set", "system", *(f"R@{k}" for k in CUTOFFS), "session hit@10",
                     "answer@1", "tokens injected", "n"], rows))  # fmt: skip
        return 0
    own_turns, own_questions, own_now = load(DEFAULT_OUT)
    delta = now - own_now
    own_turns = [t.model_copy(update={"occurred_at": t.occurred_at + delta}) for t in own_turns]
    sets: dict[str, tuple[list[TurnEvent], list[dict[str, Any]]]] = {
        "own dev": (own_turns, [q for q in own_questions if own_split(q) == "dev"]),
    }
    for one_ts in (False,) if args.quick else (False, True):
        rt = load_realtalk(one_timestamp=one_ts, now=now)
        name = "realtalk dev " + ("1-ts" if one_ts else "dates")
        sets[name] = (rt.turns, [q for q in rt.questions if q["split"] == "dev"])
    rows = []
    for name, (turns, questions) in sets.items():
        started = time.perf_counter()
        index = build_index(turns, embedder, ranking, ann_min_rows)
        bm25 = SameTokenizerBM25(turns)
        injected: dict[str, tuple[tuple[str, ...], int]] = {}
        systems = {
            "recall": index_ranker(index, now, injected, not args.no_context),
            "bm25": bm25.ranker(),
            "bm25+ctx": bm25.ranker(with_context=True),
        }
        for system, ranker in systems.items():
            m = evaluate(ranker, questions)
            a = (
                answer_first(questions, injected)
                if system == "recall"
                else {"a1": "", "tokens": ""}
            )
            rows.append([name, system, *(m[f"r{k}"] for k in CUTOFFS), m["mrr"], a["a1"],
                         a["tokens"], len(questions)])  # fmt: skip
        print(f"{name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    print(table(["set", "system", *(f"R@{k}" for k in CUTOFFS), "MRR@10", "answer@1",
                 "tokens injected", "n"], rows))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
