"""Where a recall's CPU goes: ``python -m bench.recall_cpu [--memories 50000]``.

The corpus, queries and default model of ``bench.recall_latency`` (N real turns in 5
workspaces and 50 sessions, queries from 500 held-back turns, the shipped pair), indexed
in this process (no Redis, no graph), then each request through ``RecallWorker.handle``
and its reply JSON: what a replica does per request, minus the Redis calls. Reports the
CPU per request (``time.process_time``, one thread) with the query cache warm (the 500
queries repeat) and with every query new, and each stage's share of it (cache warm),
timed around the stage's function, as the table docs/operations.md shows. The answers'
digest (``answers_sha``: each result's memory id and final score, at a fixed clock)
tells whether two versions of the code score alike; ``ranking_sha`` (each answer's
memory ids in order) whether they rank alike when a score moves in its last digits
(vectors held at another precision). Memory vectors are
made once and kept in ``--vectors`` (a replica reads them from the graph too), or
approximated (``--approximate-vectors``: the contextual model takes ~10 ms a memory,
minutes at 50k on this machine; kept in their own file too).

``bytes_per_memory`` is the RSS growth from before the memories exist (the models
loaded) to after the index is built from the vectors' file and the corpus's temporaries
are dropped, per memory: what a replica's bootstrap leaves resident.

Reference in the same run: a request parsed and a fixed reply serialised, the least a
request can cost in this process. ``--profile FILE`` writes a cProfile of the requests
(sorted by own time) to FILE; a flame graph comes from running the command under
``py-spy record``.

``--rankings FILE`` writes each answer's memory ids (one request a line) for comparing two
versions answer by answer; ``--exact-vectors`` searches every HNSW partition exactly (the
graphs' own reference).

    python -m bench.recall_cpu [--memories 50000] [--requests 1000] [--profile FILE]
        [--rankings FILE] [--exact-vectors]
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import hashlib
import io
import os
import pstats
import random
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import Any

import numpy as np

from bench.recall_index import _rss_kib, offline_worker, turn_row
from bench.recall_latency import SESSIONS, WORKSPACES, corpus
from bench.report import percentile, result_line, table
from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.workers.embeddings.composite import CompositeEmbedder
from turngraph.workers.embeddings.factory import default_local_embedder
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.embeddings.protocol import normalise_rows
from turngraph.workers.graph.recallable import episode_memory
from turngraph.workers.recall import search as search_module
from turngraph.workers.recall import worker as worker_module
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.worker import RecallWorker

STAGES: list[tuple[str, Any, str]] = [
    ("parse and validate the request", worker_module.RecallWorker, "_server"),
    ("query embedding", None, "embed"),
    ("lexical, graph, chain, session candidates", search_module, "candidates"),
    ("semantic candidates (vector search)", search_module, "semantic_scores"),
    ("fusion", search_module, "fuse"),
    ("context match", search_module, "context_scores"),
    ("scoring (multipliers)", search_module, "_score"),
    ("packing", search_module, "pack"),
    ("results and breakdowns", search_module, "_result"),
    ("memory block", worker_module, "render_memory_block"),
]


NOW = datetime(2026, 12, 1, tzinfo=UTC)
"""The clock the searches read here, so two runs' answers (recency included) compare."""


class _FixedClock(datetime):
    @classmethod
    def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
        return NOW if tz is None else NOW.astimezone(tz)


def memories_and_vectors(
    count: int, cache: Path, *, approximate: bool = False
) -> tuple[list[Memory], dict[str, Any]]:
    """The corpus as memories, and their vectors by the default model (from ``cache``,
    made and saved on the first run). ``approximate``: the static half by the static
    model, the contextual half a fixed random projection of it (vectors of the pair's
    shape in seconds instead of the contextual model's ~10 ms per memory; the answers
    are then not a real replica's, the work per request is)."""
    turns, _ = corpus(count)
    memories = [Memory.from_record(episode_memory(turn_row(t))) for t in turns]
    if cache.is_file():
        held = np.load(cache)
        return memories, dict(zip(held["ids"].tolist(), held["vectors"], strict=True))
    embedder = default_local_embedder()
    if approximate:
        assert isinstance(embedder, CompositeEmbedder)
        static = StaticEmbedder()
        texts = [m.searchable_text for m in memories]
        half = np.vstack([static.embed(texts[i : i + 4096]) for i in range(0, len(texts), 4096)])
        rng = np.random.default_rng(7)
        projection = rng.normal(size=(half.shape[1], embedder.contextual.dimension))
        other = normalise_rows((half @ projection).astype(np.float32))
        rows = normalise_rows(np.hstack([other, half]).astype(np.float32))
        ids = [m.id for m in memories]
        np.savez(cache, ids=np.array(ids), vectors=rows)
        return memories, dict(zip(ids, rows, strict=True))
    lexical = MemoryIndex()
    lexical.add_many(memories)
    ids = [m.id for m in memories]
    texts = [lexical.embedding_text(lexical._ids[i]) for i in ids]
    started = time.perf_counter()
    rows = np.vstack([embedder.embed(texts[i : i + 256]) for i in range(0, len(texts), 256)])
    print(f"embedded {len(texts)} memories in {time.perf_counter() - started:.0f} s")
    np.savez(cache, ids=np.array(ids), vectors=rows)
    return memories, dict(zip(ids, rows, strict=True))


class StageClock:
    """CPU seconds spent inside each wrapped function (outermost call only)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._depth = 0

    def wrap(self, name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            started = time.process_time()
            try:
                return function(*args, **kwargs)
            finally:
                self.seconds[name] = self.seconds.get(name, 0.0) + time.process_time() - started

        return timed


@contextmanager
def stages_timed(worker: RecallWorker, clock: StageClock) -> Iterator[None]:
    """Wrap each stage's function where ``search`` and the worker call it."""
    saved: list[tuple[Any, str, Any]] = []
    for name, owner, attribute in STAGES:
        if owner is None:  # the query embedder, an instance attribute
            semantic = worker.index.semantic
            assert semantic is not None
            target: Any = semantic.queries
        elif owner is worker_module.RecallWorker:
            target = worker._server
            attribute = "accept"
        else:
            target = owner
        original = getattr(target, attribute)
        saved.append((target, attribute, original))
        setattr(target, attribute, clock.wrap(name, original))
    try:
        yield
    finally:
        for target, attribute, original in reversed(saved):
            setattr(target, attribute, original)


def staged_pass(
    worker: RecallWorker,
    raws: list[bytes],
    handle: Callable[[bytes], None],
    before: Callable[[], None] | None,
) -> tuple[StageClock, float]:
    """Every request once with its stages timed (``before`` runs before each); returns
    the clock and the CPU ms per request."""
    clock = StageClock()
    cpu = time.process_time()
    with stages_timed(worker, clock):
        for raw in raws:
            if before is not None:
                before()
            handle(raw)
    return clock, (time.process_time() - cpu) * 1000 / len(raws)


def requests_for(queries: list[str], count: int) -> list[bytes]:
    rng = random.Random(1)
    raws = []
    for _ in range(count):
        session = rng.randrange(SESSIONS)
        request = RecallRequest(
            query=rng.choice(queries),
            session_id=f"bench-s{session}",
            workspace=f"bench-w{session % WORKSPACES}",
            user="bench-u",
        )
        raws.append(request.model_dump_json().encode())
    return raws


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--requests", type=int, default=1_000)
    parser.add_argument("--vectors", type=Path, default=None)
    parser.add_argument("--profile", type=Path, default=None)
    parser.add_argument(
        "--rankings",
        type=Path,
        default=None,
        help="write each answer's memory ids, one request a line (to compare two versions)",
    )
    parser.add_argument(
        "--exact-vectors",
        action="store_true",
        help="search every HNSW partition exactly (the graphs' reference)",
    )
    parser.add_argument(
        "--approximate-vectors",
        action="store_true",
        help="memory vectors of the pair's shape without the contextual model (see above)",
    )
    args = parser.parse_args(argv)
    kind = "-approximate" if args.approximate_vectors else ""
    default_cache = Path(tempfile.gettempdir()) / f"turngraph-recall-cpu-{args.memories}{kind}.npz"
    cache = args.vectors or default_cache
    if not cache.is_file():  # made (and saved) apart, so their making is not measured
        memories_and_vectors(args.memories, cache, approximate=args.approximate_vectors)
    _, queries = corpus(0)
    embedder = default_local_embedder()
    embedder.embed(["the models loaded before the baseline"])
    gc.collect()
    rss_before = _rss_kib()  # before the memories exist: a replica holds them too
    started = time.perf_counter()
    memories, vectors = memories_and_vectors(args.memories, cache)
    index = MemoryIndex(embedder)
    index.add_many(memories, vectors)
    del memories, vectors
    build_s = time.perf_counter() - started
    gc.collect()
    gc.freeze()  # as a bootstrapped replica does
    rss_mb = (_rss_kib() - rss_before) / 1024
    if args.exact_vectors:
        assert index.semantic is not None and index.semantic.vectors is not None
        for block in index.semantic.vectors._blocks.values():
            if block.ann is not None:
                block.ann.exact_only = True
    worker = offline_worker(index)
    search_module.datetime = _FixedClock  # type: ignore[misc]
    raws = requests_for(queries, args.requests)

    answers = hashlib.sha256()
    ranking = hashlib.sha256()
    ranked: list[str] = []

    def handle(raw: bytes) -> None:
        response = worker.handle(raw)
        assert response is not None and response.success
        response.model_dump_json()
        for result in response.results:
            answers.update(f"{result.memory_id} {result.score.final_score:.5f}\n".encode())
        line = " ".join(r.memory_id or "" for r in response.results)
        ranking.update(line.encode() + b"\n")
        if len(ranked) < len(raws):
            ranked.append(line)

    fixed = RecallResponse(request_id="r", success=True, results=[], result_count=0)

    def reference(raw: bytes) -> None:
        RecallRequest.model_validate_json(raw)
        fixed.model_dump_json()

    for raw in raws:  # warm-up, and the answers' digest (same code, same digest)
        handle(raw)
    digest = answers.hexdigest()[:12]
    if args.rankings is not None:
        args.rankings.write_text("\n".join(ranked) + "\n")
    ranking_digest = ranking.hexdigest()[:12]
    cpu = time.process_time()
    for raw in raws:
        reference(raw)
    reference_ms = (time.process_time() - cpu) * 1000 / len(raws)
    wall: list[float] = []
    profiler = cProfile.Profile() if args.profile else None
    cpu = time.process_time()
    for raw in raws:
        at = time.perf_counter()
        if profiler is not None:
            profiler.runcall(handle, raw)
        else:
            handle(raw)
        wall.append((time.perf_counter() - at) * 1000)
    cpu_ms = (time.process_time() - cpu) * 1000 / len(raws)
    queries_cache = index.semantic.queries if index.semantic is not None else None

    def forget_queries() -> None:
        if queries_cache is not None:
            queries_cache.clear_cache()

    clock, timed_ms = staged_pass(worker, raws, handle, before=None)
    new_clock, new_query_ms = staged_pass(worker, raws, handle, before=forget_queries)
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(40)
        args.profile.write_text(out.getvalue())
    rows: list[list[object]] = []
    for name, _, _ in STAGES:
        ms = clock.seconds.get(name, 0.0) * 1000 / len(raws)
        new_ms = new_clock.seconds.get(name, 0.0) * 1000 / len(raws)
        rows.append([name, ms, 100 * ms / timed_ms, new_ms])
    staged = sum(clock.seconds.values()) * 1000 / len(raws)
    new_staged = sum(new_clock.seconds.values()) * 1000 / len(raws)
    rows.append(["the rest (handle's own code, reply JSON)", timed_ms - staged,
                 100 * (timed_ms - staged) / timed_ms, new_query_ms - new_staged])  # fmt: skip
    rows.append(["one request in all", timed_ms, 100.0, new_query_ms])
    load = os.getloadavg()
    held = index.semantic.vectors.nbytes() if index.semantic and index.semantic.vectors else {}
    print(
        f"{len(index)} memories indexed in {build_s:.1f} s, RSS growth {rss_mb:.0f} MB "
        f"({rss_mb * 1024 * 1024 / len(index):.0f} bytes per memory; of which by the "
        f"vector index's own count: "
        + ", ".join(f"{k} {v / len(index):.0f}" for k, v in held.items())
        + f"); {len(raws)} requests; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"reference: parse a request and serialise an empty reply, {reference_ms:.3f} ms CPU")
    print(
        f"CPU per request: {cpu_ms:.3f} ms with the query cache warm (the queries repeat), "
        f"{new_query_ms:.3f} ms when every query is new (the model runs each time)"
    )
    print(table(["stage (CPU per request)", "ms", "share_pct", "new_query_ms"], rows))
    print(
        result_line(
            "recall_cpu",
            memories=len(index),
            vectors="approximate" if args.approximate_vectors else "model",
            search="exact" if args.exact_vectors else "hnsw",
            cpu_ms_per_request=round(cpu_ms, 3),
            new_query_cpu_ms_per_request=round(new_query_ms, 3),
            wall_p50_ms=round(percentile(wall, 50), 3),
            wall_p99_ms=round(percentile(wall, 99), 3),
            reference_cpu_ms=round(reference_ms, 3),
            bytes_per_memory=round(rss_mb * 1024 * 1024 / len(index)),
            load_1m=round(load[0], 2),
            answers_sha=digest,
            ranking_sha=ranking_digest,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
