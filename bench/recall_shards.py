"""Recall sharded over replica processes against one unsharded replica, in the same run.

    python -m bench.recall_shards [--memories 1000000] [--workspaces 2000] [--shards 4]
        [--embedding static|none] [--clients 8] [--seconds 20] [--load-share 0.5]
        [--rounds 4] [--phase-timeout 5400] [--one-process]

Synthetic memories (turn-like texts: Zipf-distributed words of the retrieval dataset's
turns plus rare identifiers, the ``bench.recall_index`` generator) spread evenly over
many workspaces, loaded through the bulk path a replica bootstraps with (a
``MemorySource`` that yields the records, standing in for the graph read: 1M turns
through ingest would take hours here). Like the graph store, the source reads only the
workspaces a sharded replica asks for (its shard filter); the replica still checks every
record it gets. On a real Redis: first one unsharded replica holding everything, then
``--shards`` replica processes, one per shard, bootstrapped at once (the unsharded one
idle meanwhile, so the two bootstraps never share the cores; both stay resident). Each
deployment is bootstrapped (at most ``--phase-timeout`` seconds, else the bench stops
with the phase named), then answers ``--clients`` closed-loop client threads
(``RecallClient`` routing by shard) for ``--seconds`` (its saturation). Then both answer
an open loop offered ``--load-share`` of the unsharded saturation, the same rate for
both, ``--seconds`` each in ``--rounds`` slices taking turns: on a machine shared with
other work, the load then falls on both alike (the same replica's p50 moved 20x between
slices seconds apart; docs/scaling.md). Reports per-replica RSS, ready time and
bootstrap CPU, the replicas' CPU per answer and how busy the machine was, how long the
replicas' threads (and the open loop's senders) waited for a core per answer and how
often the replicas were put on one (``/proc/*/schedstat``), and which shards the open
loop's slowest 1 % went to (even when the shards' lists are served alike); then one
shard's replica is stopped and requests for its workspaces
are timed (they must fail at once, ``degraded``). ``--one-process`` adds a third
deployment taking turns with the two: one process serving every shard (clients route as
for the sharded one, on request lists of its own), which separates what the sharded
code path costs from what four processes sharing the cores cost.

The default model pair does not fit 1M memories in a replica next to 7 other engineers
on 24 GB: ``--embedding static`` (the static model, 256 dimensions) is the default here.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import os
import random
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import redis

from bench.proc import cpu_seconds, machine_busy_seconds, rss_mb, scheduling
from bench.report import percentile, result_line, table
from bench.shard_corpus import SEED, SyntheticSource, vocabulary
from bench.shard_load import CollectorPauses, Load, closed_loop, open_loop
from turngraph.embedded.redis_server import RedisServer
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.keys import CHANGES_STREAM, RECALL_REQUESTS
from turngraph.schemas.shards import NO_REPLICA, ShardSet, shard_of
from turngraph.workers.embeddings.factory import local_embedder
from turngraph.workers.embeddings.local import DEFAULT_MODEL_DIR
from turngraph.workers.recall.replica import read_heartbeats
from turngraph.workers.recall.worker import RecallWorker

NO_REPLICA_SAMPLES = 20


def _replica_main(
    url: str, name: str, shards: int, owned: list[int], args: dict[str, Any], requests_key: str
) -> None:
    """One replica process: bootstrap (synchronously) from the synthetic source, serve."""
    shard_set = ShardSet(shards, frozenset(owned))
    worker = RecallWorker(
        redis_client=redis.Redis.from_url(url),
        store=SyntheticSource(args["memories"], args["workspaces"]),
        requests_key=requests_key,
        changes_stream=CHANGES_STREAM,
        reply_ttl_s=30,
        embedder=local_embedder(DEFAULT_MODEL_DIR) if args["embedding"] == "static" else None,
        name=name,
        shards=shard_set,
    )
    signal.signal(signal.SIGTERM, lambda *_: worker.stop())  # withdraws its claim on stop
    worker.bootstrap()  # which freezes the index out of the collector's view
    worker.run()


@dataclass
class Phase:
    """One deployment's run: its replicas bootstrapped, then its client loads."""

    label: str
    shards: int
    processes: int = 1
    requests_key: str = RECALL_REQUESTS
    """Its own request lists: deployments serving the same shards must not share them."""
    ready_s: dict[str, float] = field(default_factory=dict)
    boot_cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU a replica used up to ready (making the synthetic records included)."""
    rss_mb: dict[str, float] = field(default_factory=dict)
    """Largest of after ready and after the loads."""
    held: dict[str, int] = field(default_factory=dict)
    saturation: Load = field(default_factory=Load)
    offered: Load = field(default_factory=Load)
    rate: float = 0.0
    serve_cpu_ms: float = 0.0
    """The replicas' CPU per answer in the open loop."""
    runq_ms: float = 0.0
    """The replicas' time runnable but waiting for a core, per answer, in the open loop."""
    runs: float = 0.0
    """Times the replicas' threads were put on a core, per answer, in the open loop."""
    bench_runq_ms: float = 0.0
    """The open loop's senders' time waiting for a core, per request."""
    machine_busy: float = 0.0
    """Share of the machine's cores busy (anyone's work) during the open loop."""
    no_replica_ms: list[float] = field(default_factory=list)
    procs: dict[str, BaseProcess] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    serve_cpu_s: float = 0.0
    slice_p99_ms: list[float] = field(default_factory=list)
    """The open loop's p99 in each slice (the machine's load moves them)."""
    slice_runq_ms: list[float] = field(default_factory=list)
    """The replicas' wait for a core per answer in each slice."""
    bench_gc_ms: float = 0.0
    """The bench process's full collections during this deployment's slices."""
    bench_gcs: int = 0
    runq_s: float = 0.0
    runs_total: int = 0
    bench_runq_s: float = 0.0
    busy_s: float = 0.0
    wall_s: float = 0.0


def wait_ready(
    conn: redis.Redis, procs: Mapping[str, BaseProcess], timeout_s: float
) -> dict[str, float]:
    """When each replica's heartbeat first said it was bootstrapped (seconds from now)."""
    started = time.monotonic()
    ready: dict[str, float] = {}
    while len(ready) < len(procs):
        dead = [name for name, proc in procs.items() if not proc.is_alive()]
        if dead:
            raise SystemExit(f"replica {dead[0]} exited while bootstrapping")
        if time.monotonic() - started > timeout_s:
            raise SystemExit(f"replicas not ready in {timeout_s:.0f} s (--phase-timeout)")
        for beat in read_heartbeats(conn):
            if beat.replica in procs and beat.bootstrapped and beat.replica not in ready:
                ready[beat.replica] = time.monotonic() - started
        time.sleep(0.5)  # heartbeats are written once a second
    return ready


def start_phase(
    phase: Phase,
    url: str,
    spec: dict[str, Any],
    args: argparse.Namespace,
    queries: list[str],
    rate_of: Callable[[Load], float],
) -> None:
    """Start the deployment's replicas, wait for them, measure its closed-loop saturation;
    they keep running (idle) until :func:`stop_phase`."""
    ctx = mp.get_context("spawn")
    conn = redis.Redis.from_url(url)
    if phase.processes > 1:
        owned = [[s] for s in range(phase.shards)]
        names = [f"shard{s}" for s in range(phase.shards)]
    else:
        owned = [list(range(phase.shards))]
        names = ["unsharded" if phase.shards == 1 else f"1x{phase.shards}"]
    phase.procs = {
        name: ctx.Process(
            target=_replica_main,
            args=(url, name, phase.shards, mine, spec, phase.requests_key),
            daemon=True,
        )
        for name, mine in zip(names, owned, strict=True)
    }
    for proc in phase.procs.values():
        proc.start()
    pids = phase.pids
    pids.update({name: proc.pid or 0 for name, proc in phase.procs.items()})
    phase.ready_s = wait_ready(conn, phase.procs, args.phase_timeout)
    phase.boot_cpu_s = {name: cpu_seconds(pid) for name, pid in pids.items()}
    phase.rss_mb = {name: rss_mb(pid) for name, pid in pids.items()}
    phase.held = {b.replica: b.memories for b in read_heartbeats(conn) if b.replica in pids}
    phase.saturation = closed_loop(
        url,
        phase.shards,
        args.workspaces,
        queries,
        args.clients,
        args.seconds,
        phase.requests_key,
    )
    phase.rate = rate_of(phase.saturation)


def open_rounds(
    phases: list[Phase],
    url: str,
    args: argparse.Namespace,
    queries: list[str],
    rate: float,
    pauses: CollectorPauses,
) -> None:
    """Each deployment's open loop at ``rate``, in ``--rounds`` slices taking turns, so
    the machine's load (other people's work) falls on all of them alike."""
    seconds = args.seconds / args.rounds
    for _ in range(args.rounds):
        for phase in phases:
            cpu_before = sum(cpu_seconds(pid) for pid in phase.pids.values())
            sched_before = [scheduling(pid) for pid in phase.pids.values()]
            busy_before, wall_before = machine_busy_seconds(), time.monotonic()
            gc_before, gcs_before = pauses.seconds, pauses.count
            run = open_loop(
                url,
                phase.shards,
                args.workspaces,
                queries,
                rate,
                seconds,
                phase.requests_key,
                label_shards=args.shards,
            )
            phase.serve_cpu_s += sum(cpu_seconds(pid) for pid in phase.pids.values()) - cpu_before
            sched_after = [scheduling(pid) for pid in phase.pids.values()]
            pairs = list(zip(sched_after, sched_before, strict=True))
            waited = sum(after[0] - before[0] for after, before in pairs)
            phase.slice_runq_ms.append(waited * 1000 / max(1, len(run.latencies)))
            phase.runq_s += waited
            phase.runs_total += sum(after[1] - before[1] for after, before in pairs)
            phase.bench_runq_s += run.senders_waited_s
            phase.bench_gc_ms += (pauses.seconds - gc_before) * 1000
            phase.bench_gcs += pauses.count - gcs_before
            phase.busy_s += machine_busy_seconds() - busy_before
            phase.wall_s += time.monotonic() - wall_before
            phase.slice_p99_ms.append(percentile(run.latencies, 99))
            phase.offered.latencies.extend(run.latencies)
            phase.offered.shards.extend(run.shards)
            phase.offered.failures += run.failures
            phase.offered.seconds += run.seconds
    for phase in phases:
        phase.rate = rate
        answers = max(1, len(phase.offered.latencies))
        phase.serve_cpu_ms = phase.serve_cpu_s * 1000 / answers
        phase.runq_ms = phase.runq_s * 1000 / answers
        phase.runs = phase.runs_total / answers
        phase.bench_runq_ms = phase.bench_runq_s * 1000 / answers
        phase.machine_busy = phase.busy_s / (max(phase.wall_s, 1e-9) * (os.cpu_count() or 1))
        for name, pid in phase.pids.items():
            phase.rss_mb[name] = max(phase.rss_mb[name], rss_mb(pid))


def stop_phase(phase: Phase) -> None:
    for proc in phase.procs.values():
        proc.terminate()
    for proc in phase.procs.values():
        proc.join(timeout=30)


def no_replica(
    stopped: BaseProcess, conn: redis.Redis, args: argparse.Namespace, query: str
) -> list[float]:
    """Stop the last shard's replica; time requests for its workspaces (all ``degraded``)."""
    stopped.terminate()
    stopped.join(timeout=30)
    last = args.shards - 1
    orphans = [w for w in range(args.workspaces) if shard_of(f"ws{w}", args.shards) == last]
    client = RecallClient(conn, deadline_ms=2_000, shards=args.shards)
    timings = []
    for w in orphans[:NO_REPLICA_SAMPLES]:
        started = time.perf_counter()
        answer = client.recall(query, workspace=f"ws{w}", scopes=("workspace",))
        timings.append((time.perf_counter() - started) * 1000)
        if answer.degraded != [NO_REPLICA]:
            raise SystemExit(f"a request for shard {last} without replica: {answer.degraded}")
    return timings


def report(args: argparse.Namespace, unsharded: Phase, sharded: Phase, *more: Phase) -> None:
    print(
        f"{args.memories} memories over {args.workspaces} workspaces; embedding "
        f"{args.embedding}; open loop at {unsharded.rate:.1f}/s "
        f"({args.load_share:.2f} of the unsharded saturation) for both, "
        f"{args.rounds} rounds taking turns"
    )
    rows = []
    for phase in (sharded, *more, unsharded):
        for name in phase.ready_s:
            held = phase.held.get(name, 0)
            rows.append(
                [
                    name,
                    held,
                    phase.ready_s[name],
                    phase.boot_cpu_s[name],
                    phase.boot_cpu_s[name] * 1e6 / max(held, 1),
                    phase.rss_mb[name],
                ]
            )
    print(
        table(
            ["replica", "memories", "ready_s", "boot_cpu_s", "boot_cpu_us_per_memory", "rss_mb"],
            rows,
        )
    )
    load_rows = []
    for phase in (sharded, *more, unsharded):
        for mode, run in (("closed", phase.saturation), ("open", phase.offered)):
            lat = run.latencies
            load_rows.append(
                [
                    f"{phase.label} {mode}",
                    len(lat),
                    percentile(lat, 50),
                    percentile(lat, 99),
                    run.per_s,
                    run.failures,
                    phase.serve_cpu_ms if mode == "open" else "",
                    phase.runq_ms if mode == "open" else "",
                    phase.runs if mode == "open" else "",
                    phase.bench_runq_ms if mode == "open" else "",
                    phase.machine_busy if mode == "open" else "",
                ]
            )
    print(
        table(
            [
                "deployment",
                "n",
                "p50_ms",
                "p99_ms",
                "per_s",
                "failures",
                "replica_cpu_ms",
                "replica_runq_ms",
                "replica_runs",
                "bench_runq_ms",
                "busy",
            ],
            load_rows,
        )
    )
    print(
        "per answer: replica_runq_ms, bench_runq_ms the time the replicas' threads (the "
        "open loop's senders) were runnable but waiting for a core; replica_runs the "
        "times the replicas' threads were put on a core"
    )
    for phase in (sharded, *more, unsharded):
        per_shard = "/".join(str(n) for n in phase.offered.slowest_by_shard(args.shards))
        slices = ", ".join(
            f"{p99:.1f} ({runq:.1f})"
            for p99, runq in zip(phase.slice_p99_ms, phase.slice_runq_ms, strict=True)
        )
        print(
            f"{phase.label}: open-loop p99 per slice (replica_runq_ms) {slices}; "
            f"slowest 1 % by shard {per_shard}; the bench's full collections "
            f"{phase.bench_gcs}, {phase.bench_gc_ms:.1f} ms"
        )
    print(
        f"no replica for shard {args.shards - 1}: {len(sharded.no_replica_ms)} requests, "
        f"max {max(sharded.no_replica_ms):.1f} ms, all degraded {NO_REPLICA}"
    )
    max_rss = max(sharded.rss_mb.values())
    print(
        result_line(
            "recall_shards",
            memories=args.memories,
            workspaces=args.workspaces,
            embedding=args.embedding,
            shards=args.shards,
            max_replica_rss_mb=round(max_rss),
            unsharded_rss_mb=round(unsharded.rss_mb["unsharded"]),
            rss_ratio=round(max_rss / unsharded.rss_mb["unsharded"], 3),
            max_ready_s=round(max(sharded.ready_s.values()), 1),
            unsharded_ready_s=round(unsharded.ready_s["unsharded"], 1),
            offered_per_s=round(unsharded.rate, 1),
            p50_ms=round(percentile(sharded.offered.latencies, 50), 1),
            p99_ms=round(percentile(sharded.offered.latencies, 99), 1),
            unsharded_p50_ms=round(percentile(unsharded.offered.latencies, 50), 1),
            unsharded_p99_ms=round(percentile(unsharded.offered.latencies, 99), 1),
            p99_ratio=round(
                percentile(sharded.offered.latencies, 99)
                / percentile(unsharded.offered.latencies, 99),
                3,
            ),
            **(
                {"one_process_p99_ms": round(percentile(more[0].offered.latencies, 99), 1)}
                if more
                else {}
            ),
            runq_ratio=round(sharded.runq_ms / max(unsharded.runq_ms, 1e-9), 3),
            saturation_per_s=round(sharded.saturation.per_s, 1),
            unsharded_saturation_per_s=round(unsharded.saturation.per_s, 1),
            no_replica_ms=round(max(sharded.no_replica_ms), 1),
        )
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_shards")
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--workspaces", type=int, default=2_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--embedding", choices=("static", "none"), default="static")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--load-share", type=float, default=0.5)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--phase-timeout", type=float, default=5_400.0)
    parser.add_argument("--one-process", action="store_true")
    args = parser.parse_args(argv)
    words = vocabulary()
    rng = random.Random(SEED)
    queries = [" ".join(rng.sample(words[:2_000], 6)) for _ in range(500)]
    spec = {"memories": args.memories, "workspaces": args.workspaces, "embedding": args.embedding}
    # The dataset's words (100k+ objects) out of the collector's view: a full collection
    # walking them holds the GIL, and so every sender, for ~60 ms of CPU (~200 ms of wall
    # time at load 20), in whichever slice it falls. Those made during slices are counted.
    gc.collect()
    gc.freeze()
    pauses = CollectorPauses()
    gc.callbacks.append(pauses)
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        unsharded = Phase("unsharded", 1)
        sharded = Phase(f"{args.shards} shards", args.shards, args.shards)
        one = (
            [
                Phase(
                    f"1 process x {args.shards} shards",
                    args.shards,
                    requests_key=f"{RECALL_REQUESTS}:one-process",
                )
            ]
            if args.one_process
            else []
        )
        try:
            start_phase(
                unsharded,
                server.url,
                spec,
                args,
                queries,
                lambda saturation: args.load_share * saturation.per_s,
            )
            for phase in (sharded, *one):
                start_phase(phase, server.url, spec, args, queries, lambda _s: unsharded.rate)
            open_rounds(
                [unsharded, sharded, *one], server.url, args, queries, unsharded.rate, pauses
            )
            for phase in one:  # its claims would answer for the stopped shard
                stop_phase(phase)
            sharded.no_replica_ms = no_replica(
                sharded.procs[f"shard{args.shards - 1}"],
                redis.Redis.from_url(server.url),
                args,
                queries[0],
            )
        finally:
            for phase in (sharded, *one, unsharded):
                stop_phase(phase)
            server.stop()
    report(args, unsharded, sharded, *one)
    return 0


if __name__ == "__main__":
    sys.exit(main())
