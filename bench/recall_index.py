"""In-process recall index at scale: ``python -m bench.recall_index [N]``.

Builds a :class:`~workers.recall.index.MemoryIndex` with N synthetic memories (default
50,000) plus the retrieval dataset's real turns, then runs the dataset's questions
(standalone and follow-ups) through :func:`~workers.recall.search.search`. Reports build
time, the process RSS growth, and search latency percentiles, with the garbage collector
as it is and after ``gc.freeze()`` (what a replica does once bootstrapped,
``workers/recall/feed.py``: the index's long-lived objects then stop being rescanned);
once with everything in one workspace (the worst case for postings lengths) and once
spread over 20 workspaces.
No Redis here: the end-to-end benchmark through the request list is
``bench.recall_latency``.

``--embedding local`` (the default) adds the default model's vectors: each synthetic
memory gets a stored vector of the pair's dimension, the way a replica bootstraps the
vectors the ingest workers stored (a hashed bag of its words: the bytes are what a real
vector costs; embedding 50k texts with the pair would take minutes), and queries go
through the real model. ``--embedding none``: lexical only.

**Bytes per memory** (issue 24): the RSS growth divided by the memories held
(``bytes_per_memory``), and by component: ``postings`` (term and entity columns, their
dicts and term strings), ``texts`` (the memories' text strings), ``vectors`` (int8 rows
of small partitions), ``hnsw`` (graphs with their int8 codes, and ``usearch``'s own
count of its links), and ``metadata``: the rest of the growth (the memories' other fields, the id
maps, the interpreter's overhead).
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing
import random
import re
import sys
import time
from collections.abc import Iterable, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from bench.report import percentile, result_line, table
from bench.retrieval_data import DEFAULT_OUT, load
from turngraph.schemas.recall import ConversationTurn, RecallRequest
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.embeddings.factory import default_local_embedder
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.graph.recallable import episode_memory
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory, MemoryKind
from turngraph.workers.recall.search import search
from turngraph.workers.recall.worker import RecallWorker

SEED = 7
_WORDS = re.compile(r"[A-Za-z][A-Za-z_.\-]+")


def turn_row(event: TurnEvent, entities: Iterable[str] = ()) -> dict[str, Any]:
    """The episode row a turn becomes once written (the index built here without a graph)."""
    return {
        "event_id": event.event_id,
        "content": event.content,
        "session_id": event.session_id,
        "workspace": event.workspace,
        "user": event.user,
        "turn_index": event.turn_index,
        "role": event.role.value,
        "speaker": event.speaker,
        "occurred_at": event.occurred_at,
        "entities": list(entities),
    }


def offline_worker(index: MemoryIndex) -> RecallWorker:
    """A recall worker over ``index`` with no Redis and no graph: ``handle()`` of a
    request without ``reply_to`` answers in process and never replies."""
    worker = RecallWorker(
        redis_client=None,  # type: ignore[arg-type]
        store=None,  # type: ignore[arg-type]
        requests_key="unused",
        changes_stream="unused",
        reply_ttl_s=1,
    )
    worker.index = index
    return worker


def _rss_kib() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def synthetic(
    n: int, vocabulary: Sequence[str], workspaces: Sequence[str], now: datetime
) -> list[Memory]:
    """Turn-like texts: Zipf-distributed words from real chat plus rare identifiers."""
    rng = random.Random(SEED)
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]
    identifiers = [f"{rng.choice(vocabulary)}_{i}" for i in range(n // 5)]
    memories = []
    for i in range(n):
        workspace = workspaces[i % len(workspaces)]
        session = f"{workspace}_syn{i // 40}"
        words = rng.choices(vocabulary, weights=weights, k=rng.randint(12, 70))
        names = rng.sample(identifiers, k=rng.randint(0, 3))
        memories.append(
            Memory(
                id=f"syn{i}",
                text=" ".join(words + names),
                kind=MemoryKind.EPISODE,
                scope="session",
                created_at=now - timedelta(minutes=n - i),
                source_event_ids=(f"syn{i}",),
                session_id=session,
                workspace=workspace,
                user="u_dana",
                entities=tuple(name.replace("_", " ") for name in names),
                turn_index=i % 40,
            )
        )
    return memories


def hashed_vectors(memories: Sequence[Memory], dimension: int) -> dict[str, np.ndarray]:
    """A unit vector per memory: the sum of a fixed random vector per word (structured
    like a bag-of-words model, so HNSW builds as on real vectors), rows of one matrix."""
    rng = np.random.default_rng(SEED)
    vocabulary: dict[str, int] = {}
    words = [[vocabulary.setdefault(w, len(vocabulary)) for w in m.text.split()] for m in memories]
    table_ = rng.standard_normal((len(vocabulary), dimension), dtype=np.float32)
    rows = np.empty((len(memories), dimension), dtype=np.float32)
    for i, ids in enumerate(words):
        rows[i] = table_[ids].sum(axis=0)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return {memory.id: rows[i] for i, memory in enumerate(memories)}


def footprint(index: MemoryIndex) -> dict[str, int]:
    """Bytes held by the postings, the texts, and the vectors (see the module docstring)."""
    postings = 0
    for part in index._parts.values():
        for restated in (False, True):
            terms, entities = part.postings_of(restated), part.entities_of(restated)
            postings += sys.getsizeof(terms) + sys.getsizeof(entities)
            for term, columns in terms.items():
                postings += sys.getsizeof(term) + sys.getsizeof(columns)
                postings += sum(
                    sys.getsizeof(c) for c in (columns.ids, columns.tfs, columns.weights)
                )
            for key, ids in entities.items():
                postings += sys.getsizeof(key) + sys.getsizeof(ids)
    texts = sum(sys.getsizeof(doc.memory.text) for doc in index._docs.values())
    found = {"postings": postings, "texts": texts, "vectors": 0, "hnsw": 0, "vector_ids": 0}
    if index.semantic is not None and index.semantic.vectors is not None:
        found.update(index.semantic.vectors.nbytes())
    return found


def run_alone(n: int, n_workspaces: int, embedding: str) -> dict[str, Any]:
    """One configuration in a fresh process: memory freed by an earlier index would be
    reused by the next one and hide its growth."""
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        return pool.apply(_run_in_child, (n, n_workspaces, embedding))


def _run_in_child(n: int, n_workspaces: int, embedding: str) -> dict[str, Any]:
    embedder = default_local_embedder() if embedding == "local" else None
    if embedder is not None:
        embedder.embed(["warm the model's buffers up before measuring"] * 8)
    return run(n, n_workspaces, embedder)


def run(n: int, n_workspaces: int, embedder: Embedder | None) -> dict[str, Any]:
    turns, questions, now = load(DEFAULT_OUT)
    vocab_counts: dict[str, int] = {}
    for turn in turns:
        for word in _WORDS.findall(turn.content.lower()):
            vocab_counts[word] = vocab_counts.get(word, 0) + 1
    vocabulary = sorted(vocab_counts, key=vocab_counts.__getitem__, reverse=True)
    workspaces = ["ws_ledgerline"] + [f"ws_syn{i}" for i in range(1, n_workspaces)]
    gc.collect()
    rss_before = _rss_kib()  # before the memories exist: a replica holds them too
    memories = synthetic(n, vocabulary, workspaces, now)
    stored = hashed_vectors(memories, embedder.dimension) if embedder is not None else None
    started = time.perf_counter()
    index = MemoryIndex(embedder)
    index.add_many(Memory.from_record(episode_memory(turn_row(t))) for t in turns)
    index.add_many(memories, stored)
    build_s = time.perf_counter() - started
    del memories, stored
    gc.collect()
    rss_after = _rss_kib()
    held = len(index)
    parts = footprint(index)
    growth = (rss_after - rss_before) * 1024
    parts["metadata"] = growth - sum(parts.values())
    requests = [
        RecallRequest(
            query=q["question"],
            workspace=q["workspace"],
            user=q["user"],
            session_id="bench_question_session",
            conversation_context=tuple(ConversationTurn(**t) for t in q["conversation_context"]),
        )
        for q in questions
    ]
    for request in requests:  # warm-up
        search(index, request, now)
    row: dict[str, Any] = {
        "memories": len(index),
        "workspaces": n_workspaces,
        "dimension": embedder.dimension if embedder is not None else 0,
        "build_s": build_s,
        "rss_mb": growth / 2**20,
        "bytes_per_memory": growth / held,
        **{f"{name}_b": value / held for name, value in parts.items()},
    }
    for label in ("", "frozen_"):
        if label:
            gc.freeze()
        timings = []
        for _ in range(5):
            for request in requests:
                t0 = time.perf_counter()
                search(index, request, now)
                timings.append((time.perf_counter() - t0) * 1000)
        for pct in (50, 95, 99):
            row[f"{label}p{pct}_ms"] = percentile(timings, pct)
    gc.unfreeze()
    return row


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_index")
    parser.add_argument("memories", type=int, nargs="?", default=50_000)
    parser.add_argument("--embedding", choices=("local", "none"), default="local")
    args = parser.parse_args(argv)
    rows = [run_alone(args.memories, w, args.embedding) for w in (1, 20)]
    headers = [h for h in rows[0] if not h.endswith("_b")]
    print(table(headers, [[row[h] for h in headers] for row in rows]))
    components = [h for h in rows[0] if h.endswith("_b")]
    print("\nbytes per memory by component (metadata: the rest of the RSS growth)")
    print(
        table(
            ["workspaces", "total", *components],
            [[r["workspaces"], r["bytes_per_memory"], *(r[c] for c in components)] for r in rows],
        )
    )
    worst = rows[0]
    print(
        result_line(
            "recall_index",
            memories=worst["memories"],
            embedding=args.embedding,
            dimension=rows[0]["dimension"],
            bytes_per_memory=round(worst["bytes_per_memory"]),
            spread_bytes_per_memory=round(rows[1]["bytes_per_memory"]),
            search_p50_ms=round(worst["p50_ms"], 3),
            search_p95_ms=round(worst["p95_ms"], 3),
            search_p99_ms=round(worst["p99_ms"], 3),
            frozen_search_p99_ms=round(worst["frozen_p99_ms"], 3),
            rss_growth_mb=round(worst["rss_mb"], 1),
            build_s=round(worst["build_s"], 2),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
