"""In-process recall with the semantic signal on: ``python -m bench.recall_semantic_index``.

The corpus and queries of ``bench.recall_latency`` (N real turns, default 50,000, in 5
workspaces and 50 sessions; queries from 500 held-back turns), indexed directly with the
shipped local model (no Redis, no graph), then the same requests through
:func:`~workers.recall.search.search` and through ``RecallWorker.handle`` plus the reply
JSON (what a replica does per request), with each partition's HNSW graph and with exact
search, alternated over three rounds so both see the same machine load. Reports build
time, RSS growth and latency percentiles.

    python -m bench.recall_semantic_index [--memories 50000] [--requests 600]
"""

from __future__ import annotations

import argparse
import gc
import random
import sys
import time
from datetime import UTC, datetime
from typing import Any

from bench.recall_index import _rss_kib, offline_worker, turn_row
from bench.recall_latency import SESSIONS, WORKSPACES, corpus
from bench.report import percentile, result_line, table
from turngraph.schemas.recall import RecallRequest
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.graph.recallable import episode_memory
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.search import search

ROUNDS = 3


def _timed(calls: list[Any]) -> list[float]:
    timings = []
    for call in calls:
        started = time.perf_counter()
        call()
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=600)
    args = parser.parse_args(argv)
    turns, queries = corpus(args.memories)
    gc.collect()
    rss_before = _rss_kib()
    started = time.perf_counter()
    index = MemoryIndex(StaticEmbedder())
    index.add_many(Memory.from_record(episode_memory(turn_row(t))) for t in turns)
    build_s = time.perf_counter() - started
    gc.collect()
    rss_mb = (_rss_kib() - rss_before) / 1024
    rng = random.Random(1)
    requests = []
    for _ in range(args.requests):
        session = rng.randrange(SESSIONS)
        requests.append(
            RecallRequest(
                query=rng.choice(queries),
                session_id=f"bench-s{session}",
                workspace=f"bench-w{session % WORKSPACES}",
                user="bench-u",
            )
        )
    worker = offline_worker(index)
    raws = [request.model_dump_json().encode() for request in requests]
    now = datetime.now(UTC)

    def handle(raw: bytes) -> None:
        response = worker.handle(raw)
        assert response is not None
        response.model_dump_json()

    searches = [lambda r=r: search(index, r, now) for r in requests]
    handles = [lambda raw=raw: handle(raw) for raw in raws]
    _timed(searches[:50])  # warm-up
    assert index.semantic is not None and index.semantic.vectors is not None
    blocks = index.semantic.vectors._blocks
    graphs = {key: block.ann for key, block in blocks.items()}
    found: dict[str, list[float]] = {}
    for _ in range(ROUNDS):
        for mode in ("hnsw", "exact"):
            # Exact: every row of a graph's partition compared (its stored vectors; since
            # issue 24 a large partition keeps no second, exact copy).
            for graph in graphs.values():
                if graph is not None:
                    graph.exact_only = mode == "exact"
            found.setdefault(f"search {mode}", []).extend(_timed(searches))
            found.setdefault(f"handle+reply {mode}", []).extend(_timed(handles))
    for graph in graphs.values():
        if graph is not None:
            graph.exact_only = False
    rows = [
        [name, len(values), *(percentile(values, p) for p in (50, 95, 99))]
        for name, values in found.items()
    ]
    print(
        f"{len(index)} memories in {len(blocks)} partitions, "
        f"{sum(g is not None for g in graphs.values())} with an HNSW graph; "
        f"built in {build_s:.1f} s; RSS growth {rss_mb:.0f} MB"
    )
    print(table(["measure (ms)", "n", "p50", "p95", "p99"], rows))
    hnsw, exact = found["handle+reply hnsw"], found["handle+reply exact"]
    print(
        result_line(
            "recall_semantic_index",
            memories=len(index),
            handle_p50_ms=round(percentile(hnsw, 50), 3),
            handle_p99_ms=round(percentile(hnsw, 99), 3),
            exact_handle_p50_ms=round(percentile(exact, 50), 3),
            exact_handle_p99_ms=round(percentile(exact, 99), 3),
            rss_growth_mb=round(rss_mb, 1),
            build_s=round(build_s, 1),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
