"""A partition's HNSW search with its memory in the CPU's cache and out of it:
``python -m bench.ann_cache [--vectors FILE]``.

A replica holds one graph per partition (a workspace or session scope) and, between two
searches of one graph, runs the rest of a request and other partitions' searches: the
graph's links and codes are mostly out of the CPU's caches when the next query comes.
The in-process benches search one graph again and again and miss that cost. This one
builds ``--partitions`` graphs (``workers.recall.ann.AnnGraph``, the replica's own) of
``--rows`` rows each (9,900: about a workspace of ``bench.recall_latency`` at 50,000,
leaving 500 rows of a 50,000-row vectors file for queries) and times the same queries
three ways: *warm* (always the first graph: the reference, measured in the same run),
*rotate* (the graphs in turn, as the bench's requests spread over workspaces) and
*evicted* (the first graph, after reading 64 MB between two queries, as a request's
Python work and other replicas do). When
``hnswlib`` is importable (the library before ``usearch``; not a dependency) its float32
graph over the same rows is timed the same way beside it.

Rows are the memory vectors ``bench.recall_cpu`` keeps (``--vectors``, the file it
writes), or, without one, the static model's vectors of the ``bench.recall_latency``
corpus with the contextual half a fixed random projection (vectors of the pair's shape
in seconds). Queries are other rows of the corpus. CPU per search is
``time.process_time`` around the search alone.

    python -m bench.ann_cache [--vectors FILE] [--rows 9900] [--partitions 5]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from bench.report import result_line, table
from turngraph.workers.recall.ann import AnnGraph
from turngraph.workers.recall.semantic import SEMANTIC_CANDIDATES

EVICT_BYTES = 64 * 1024 * 1024
"""What is read between two queries in the evicted mode: more than any L3 here."""


def corpus_rows(path: Path | None, count: int) -> npt.NDArray[np.float32]:
    """``count`` unit rows: from ``bench.recall_cpu``'s vectors file, or approximated by
    its own ``memories_and_vectors`` (kept in a temporary file)."""
    if path is not None:
        with np.load(path) as held:
            return np.asarray(held["vectors"][:count], dtype=np.float32)
    from bench.recall_cpu import memories_and_vectors

    with tempfile.TemporaryDirectory() as scratch:
        _, vectors = memories_and_vectors(count, Path(scratch) / "v.npz", approximate=True)
    return np.vstack(list(vectors.values())).astype(np.float32)


def timed(search: Callable[[int, int], object], queries: int, mode: str, graphs: int) -> float:
    """Mean CPU ms of one search in ``mode`` (warm, rotate, evicted)."""
    junk = np.ones(EVICT_BYTES // 8)
    spent = 0.0
    for q in range(queries):
        graph = q % graphs if mode == "rotate" else 0
        if mode == "evicted":
            junk.sum()
        started = time.process_time()
        search(graph, q)
        spent += time.process_time() - started
    return spent / queries * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vectors", type=Path, default=None)
    parser.add_argument("--rows", type=int, default=9_900)
    parser.add_argument("--partitions", type=int, default=5)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args(argv)
    if args.rows < 2 * SEMANTIC_CANDIDATES or args.partitions < 1 or args.queries < 1:
        parser.error(f"--rows must be >= {2 * SEMANTIC_CANDIDATES}; --partitions, --queries >= 1")

    total = args.rows * args.partitions
    rows = corpus_rows(args.vectors, total + args.queries)
    if len(rows) < total + args.queries:
        parser.error(f"the vectors file holds {len(rows)} rows; {total + args.queries} needed")
    parts = [rows[p : total : args.partitions] for p in range(args.partitions)]
    queries = rows[total : total + args.queries]
    k = SEMANTIC_CANDIDATES

    graphs = []
    for part in parts:
        graph = AnnGraph(part.shape[1])
        graph.add(np.arange(len(part), dtype=np.int64), part)
        graphs.append(graph)
    searchers: dict[str, Callable[[int, int], object]] = {
        "usearch int8 (AnnGraph)": lambda g, q: graphs[g].search(queries[q], k)
    }
    try:
        hnswlib: Any = importlib.import_module("hnswlib")
    except ImportError:
        hnswlib = None
    if hnswlib is not None:
        others = []
        for part in parts:
            other = hnswlib.Index(space="ip", dim=part.shape[1])
            other.init_index(max_elements=len(part), ef_construction=128, M=16)
            other.set_num_threads(1)
            other.add_items(part, np.arange(len(part)))
            other.set_ef(128)
            others.append(other)
        searchers["hnswlib float32"] = lambda g, q: others[g].knn_query(queries[q : q + 1], k=k)

    results: dict[str, dict[str, list[float]]] = {}
    for _ in range(args.rounds):  # alternated so every figure sees the same machine
        for name, search in searchers.items():
            for mode in ("warm", "rotate", "evicted"):
                results.setdefault(name, {}).setdefault(mode, []).append(
                    timed(search, args.queries, mode, args.partitions)
                )
    load = os.getloadavg()[0]
    print(
        f"{args.partitions} graphs of {args.rows} rows, {rows.shape[1]} dimensions, "
        f"{args.queries} queries x {args.rounds} rounds, {k} nearest; load {load:.1f}"
    )
    medians = {
        name: [float(np.median(modes[mode])) for mode in ("warm", "rotate", "evicted")]
        for name, modes in results.items()
    }
    lines = [[name, w, r, e, r / w, e / w] for name, (w, r, e) in medians.items()]
    print(table(["graph", "warm_ms", "rotate_ms", "evicted_ms", "rotate_x", "evicted_x"], lines))
    warm, rotate, evicted = next(iter(medians.values()))
    print(
        result_line(
            "ann_cache",
            rows=args.rows,
            partitions=args.partitions,
            warm_ms=round(warm, 3),
            rotate_ms=round(rotate, 3),
            evicted_ms=round(evicted, 3),
            evicted_x=round(evicted / warm, 3),
            load_1m=round(load, 2),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
