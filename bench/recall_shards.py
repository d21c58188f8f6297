"""Recall sharded over replica processes against one unsharded replica, in the same run.

    python -m bench.recall_shards [--memories 1000000] [--workspaces 2000] [--shards 4]
        [--embedding static|none] [--clients 8] [--seconds 10]

Synthetic memories (turn-like texts: Zipf-distributed words of the retrieval dataset's
turns plus rare identifiers, the ``bench.recall_index`` generator) spread evenly over
many workspaces, loaded through the bulk path a replica bootstraps with (a
``MemorySource`` that yields the records, standing in for the graph read: 1M turns
through ingest would take hours here). Each replica reads only the workspaces of its
shards (what a shard-aware graph read returns; its own shard filter still checks every
record). On a real Redis: ``--shards`` replica processes, one per shard, and one
unsharded replica holding everything, all bootstrapped at once; then each deployment
in turn answers ``--clients`` closed-loop client threads (``RecallClient`` routing by
shard) for ``--seconds``. Reports per-replica RSS and ready time, p50/p99 and the
saturation (answers per second) of each deployment; then one shard's replica is stopped
and requests for its workspaces are timed (they must fail at once, ``degraded``).

The default model pair does not fit 5 replicas x 1M memories next to 7 other engineers on
24 GB: ``--embedding static`` (the static model, 256 dimensions) is the default here.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import random
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import redis

from bench.proc import rss_mb
from bench.report import percentile, result_line, table
from bench.retrieval_data import DEFAULT_OUT, load
from turngraph.embedded.redis_server import RedisServer
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.changes import MemoryKind, MemoryRecord
from turngraph.schemas.keys import CHANGES_STREAM, RECALL_REQUESTS
from turngraph.schemas.scopes import Scope
from turngraph.schemas.shards import NO_REPLICA, ShardSet, shard_of
from turngraph.workers.embeddings.factory import local_embedder
from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR
from turngraph.workers.recall.replica import read_heartbeats
from turngraph.workers.recall.worker import RecallWorker

SEED = 11
SESSIONS_PER_WORKSPACE = 20
WORDS = (12, 60)
NO_REPLICA_SAMPLES = 20


def vocabulary() -> list[str]:
    turns, _, _ = load(DEFAULT_OUT)
    counts: dict[str, int] = {}
    for turn in turns:
        for word in turn.content.lower().split():
            word = word.strip(".,!?;:()\"'")
            if word.isalpha():
                counts[word] = counts.get(word, 0) + 1
    return sorted(counts, key=counts.__getitem__, reverse=True)


class SyntheticSource:
    """The records of ``memories`` turns over ``workspaces`` workspaces, generated the
    same way in every process (seeded per workspace), limited to ``wanted`` workspaces."""

    def __init__(self, memories: int, workspaces: int, wanted: set[str] | None) -> None:
        self.memories, self.workspaces, self.wanted = memories, workspaces, wanted

    def recallable_memories(self) -> Iterator[MemoryRecord]:
        words = vocabulary()
        weights = [1 / (rank + 1) for rank in range(len(words))]
        cumulative = list(_accumulate(weights))
        now = datetime.now(UTC)
        per = self.memories // self.workspaces
        for w in range(self.workspaces):
            workspace = f"ws{w}"
            if self.wanted is not None and workspace not in self.wanted:
                continue
            rng = random.Random(SEED * 1_000_003 + w)
            for i in range(per):
                session = f"{workspace}-s{i % SESSIONS_PER_WORKSPACE}"
                text = rng.choices(words, cum_weights=cumulative, k=rng.randint(*WORDS))
                if rng.random() < 0.3:
                    text.append(f"{rng.choice(words)}_{rng.randrange(per)}")
                yield MemoryRecord(
                    id=f"{workspace}-m{i}",
                    text=" ".join(text),
                    kind=MemoryKind.EPISODE,
                    scope=Scope.SESSION,
                    created_at=now - timedelta(minutes=per - i),
                    source_event_ids=(f"{workspace}-e{i}",),
                    session_id=session,
                    workspace=workspace,
                    user=f"u{w}",
                    turn_index=i // SESSIONS_PER_WORKSPACE,
                )


def _accumulate(values: list[float]) -> Iterator[float]:
    total = 0.0
    for value in values:
        total += value
        yield total


def _replica_main(url: str, name: str, shards: int, owned: list[int], args: dict[str, Any]) -> None:
    """One replica process: bootstrap (synchronously) from the synthetic source, serve."""
    shard_set = ShardSet(shards, frozenset(owned))
    wanted = {f"ws{w}" for w in range(args["workspaces"]) if shard_set.holds("workspace", f"ws{w}")}
    worker = RecallWorker(
        redis_client=redis.Redis.from_url(url),
        store=SyntheticSource(args["memories"], args["workspaces"], wanted),
        requests_key=RECALL_REQUESTS,
        changes_stream=CHANGES_STREAM,
        reply_ttl_s=30,
        embedder=local_embedder(DEFAULT_MODEL_DIR) if args["embedding"] == "static" else None,
        name=name,
        shards=shard_set,
    )
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())  # withdraws its claim on stop
    worker.bootstrap()
    gc.freeze()  # what a bootstrapped replica's long-lived objects should get
    worker.run()


def wait_ready(conn: redis.Redis, names: set[str], timeout_s: float) -> dict[str, float]:
    """When each replica's heartbeat first said it was bootstrapped (seconds from now)."""
    started = time.monotonic()
    ready: dict[str, float] = {}
    while len(ready) < len(names):
        if time.monotonic() - started > timeout_s:
            raise SystemExit("replicas not ready in time")
        for beat in read_heartbeats(conn):
            if beat.replica in names and beat.bootstrapped and beat.replica not in ready:
                ready[beat.replica] = time.monotonic() - started
        time.sleep(0.5)
    return ready


def closed_loop(
    url: str, shards: int, workspaces: int, queries: list[str], clients: int, seconds: float
) -> tuple[list[float], int]:
    latencies: list[float] = []
    failures = 0
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def run(seed: int) -> None:
        nonlocal failures
        rng = random.Random(seed)
        client = RecallClient(redis.Redis.from_url(url), deadline_ms=5_000, shards=shards)
        mine, bad = [], 0
        while time.monotonic() < stop_at:
            w = rng.randrange(workspaces)
            started = time.perf_counter()
            response = client.recall(
                rng.choice(queries), workspace=f"ws{w}", user=f"u{w}", scopes=("workspace",)
            )
            mine.append((time.perf_counter() - started) * 1000)
            bad += not response.success or bool(response.degraded)
        with lock:
            latencies.extend(mine)
            failures += bad

    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies, failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_shards")
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--workspaces", type=int, default=2_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--embedding", choices=("static", "none"), default="static")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    args = parser.parse_args(argv)
    words = vocabulary()
    rng = random.Random(SEED)
    queries = [" ".join(rng.sample(words[:2_000], 6)) for _ in range(500)]
    spec = {"memories": args.memories, "workspaces": args.workspaces, "embedding": args.embedding}
    ctx = mp.get_context("spawn")
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        url = server.url
        conn = redis.Redis.from_url(url)
        plan = {f"shard{s}": (args.shards, [s]) for s in range(args.shards)}
        plan["unsharded"] = (1, [0])
        procs = {
            name: ctx.Process(target=_replica_main, args=(url, name, n, owned, spec), daemon=True)
            for name, (n, owned) in plan.items()
        }
        try:
            for proc in procs.values():
                proc.start()
            ready = wait_ready(conn, set(procs), 7_200)
            memory = {
                name: rss_mb(proc.pid) for name, proc in procs.items() if proc.pid is not None
            }
            held = {b.replica: b.memories for b in read_heartbeats(conn)}
            runs = {
                count: closed_loop(url, count, args.workspaces, queries, args.clients, args.seconds)
                for count in (args.shards, 1)
            }
            stopped = f"shard{args.shards - 1}"
            procs[stopped].terminate()
            procs[stopped].join(timeout=30)
            orphans = [
                w
                for w in range(args.workspaces)
                if shard_of(f"ws{w}", args.shards) == args.shards - 1
            ]
            client = RecallClient(conn, deadline_ms=2_000, shards=args.shards)
            no_replica, answers = [], []
            for w in orphans[:NO_REPLICA_SAMPLES]:
                started = time.perf_counter()
                answers.append(client.recall(queries[0], workspace=f"ws{w}", scopes=("workspace",)))
                no_replica.append((time.perf_counter() - started) * 1000)
        finally:
            for proc in procs.values():
                proc.terminate()
            for proc in procs.values():
                proc.join(timeout=30)
            server.stop()
    rows = [[name, held.get(name, 0), ready[name], memory[name]] for name in plan]
    print(f"{args.memories} memories over {args.workspaces} workspaces; embedding {args.embedding}")
    print(table(["replica", "memories", "ready_s", "rss_mb"], rows))
    load_rows = []
    for count, (lat, failures) in runs.items():
        label = f"{count} shards" if count > 1 else "unsharded"
        load_rows.append(
            [
                label,
                len(lat),
                percentile(lat, 50),
                percentile(lat, 99),
                len(lat) / args.seconds,
                failures,
            ]
        )
    print(table(["deployment", "n", "p50_ms", "p99_ms", "per_s", "failures"], load_rows))
    assert all(a.degraded == [NO_REPLICA] for a in answers), "a request without replica"
    sharded_rss = max(memory[f"shard{s}"] for s in range(args.shards))
    print(
        f"no replica for shard {args.shards - 1}: {len(no_replica)} requests, "
        f"max {max(no_replica):.1f} ms, all degraded {NO_REPLICA}"
    )
    print(
        result_line(
            "recall_shards",
            memories=args.memories,
            workspaces=args.workspaces,
            embedding=args.embedding,
            shards=args.shards,
            max_replica_rss_mb=round(sharded_rss),
            unsharded_rss_mb=round(memory["unsharded"]),
            rss_ratio=round(sharded_rss / memory["unsharded"], 3),
            max_ready_s=round(max(ready[f"shard{s}"] for s in range(args.shards)), 1),
            unsharded_ready_s=round(ready["unsharded"], 1),
            p50_ms=round(percentile(runs[args.shards][0], 50), 2),
            p99_ms=round(percentile(runs[args.shards][0], 99), 2),
            saturation_per_s=round(len(runs[args.shards][0]) / args.seconds),
            unsharded_p50_ms=round(percentile(runs[1][0], 50), 2),
            unsharded_p99_ms=round(percentile(runs[1][0], 99), 2),
            unsharded_saturation_per_s=round(len(runs[1][0]) / args.seconds),
            no_replica_ms=round(max(no_replica), 2),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
