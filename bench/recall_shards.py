"""Recall sharded over replica processes against one unsharded replica, in the same run.

    python -m bench.recall_shards [--memories 1000000] [--workspaces 2000] [--shards 4]
        [--embedding static|none] [--clients 8] [--seconds 20]
        [--load-shares 0.25,0.5,0.75] [--result-share 0.5] [--answers 3000] [--rounds 4]
        [--phase-timeout 5400] [--boot-apart] [--one-process]

Synthetic memories (turn-like texts: Zipf-distributed words of the retrieval dataset's
turns plus rare identifiers, the ``bench.recall_index`` generator) spread evenly over
many workspaces, loaded through the bulk path a replica bootstraps with (a
``MemorySource`` that yields the records, standing in for the graph read: 1M turns
through ingest would take hours here). Like the graph store, the source reads only the
workspaces a sharded replica asks for (its shard filter); the replica still checks every
record it gets. On a real Redis: one unsharded replica holding everything and
``--shards`` replica processes, one per shard, all bootstrapped at once (the bootstraps
are most of a large run's time; ``--boot-apart`` bootstraps one deployment at a time,
so that ready times are each deployment's alone, at the cost of a core left idle), at
most ``--phase-timeout`` seconds, else the bench stops with the phase named. Each
deployment then answers ``--clients`` closed-loop client threads (``RecallClient``
routing by shard) for ``--seconds`` (its saturation), the others idle, and again after
the open loops (a rate taken from a quiet moment may overload a busier one). Then every
deployment answers an open loop at each of ``--load-shares`` of the unsharded
saturation (the same rates for all; p99 depends on the rate: at low load four
processes pay more wake-ups, at high load they use both cores where one process has one
GIL), ``--answers`` requests per deployment and rate in ``--rounds`` slices taking
turns: on a machine shared with other work the load then falls on all alike, and each
p99 rests on the answers pooled over its slices (their count is printed). The
``RESULT`` line's ``p99_ms``/``unsharded_p99_ms`` are at ``--result-share`` (0.5, as
in every run before the rates were added), the p99 ratio at every rate beside them.
Reports per-replica RSS, ready time and bootstrap CPU, the replicas' CPU per answer and
how busy the machine was, how long the replicas' threads (and the open loop's senders)
waited for a core per answer and how often the replicas were put on one
(``/proc/*/schedstat``), and which shards the open loop's slowest 1 % went to (even
when the shards' lists are served alike); then one shard's replica is stopped and
requests for its workspaces are timed (they must fail at once, ``degraded``).
``--one-process`` adds a third deployment taking turns with the two: one process serving
every shard (clients route as for the sharded one, on request lists of its own), which
separates what the sharded code path costs from what four processes sharing the cores
cost.

The default model pair does not fit 1M memories in a replica next to 7 other engineers
on 24 GB: ``--embedding static`` (the static model, 256 dimensions) is the default here.
"""

from __future__ import annotations

import argparse
import gc
import multiprocessing as mp
import random
import signal
import sys
import tempfile
import time
from collections.abc import Mapping
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import redis

from bench.proc import cpu_seconds, rss_mb
from bench.shard_corpus import SEED, SyntheticSource, vocabulary
from bench.shard_load import CollectorPauses, Load, closed_loop
from bench.shard_open import OpenPlan, Phase, open_rounds
from bench.shard_report import report
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


def launch(phase: Phase, url: str, spec: dict[str, Any]) -> None:
    """Start the deployment's replica processes (they bootstrap, then serve)."""
    ctx = mp.get_context("spawn")
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
    phase.pids.update({name: proc.pid or 0 for name, proc in phase.procs.items()})


def await_ready(phases: list[Phase], url: str, timeout_s: float) -> None:
    """Wait for every replica of ``phases`` (started together); record ready time,
    bootstrap CPU, RSS and what each holds."""
    conn = redis.Redis.from_url(url)
    procs = {name: proc for phase in phases for name, proc in phase.procs.items()}
    ready = wait_ready(conn, procs, timeout_s)
    held = {b.replica: b.memories for b in read_heartbeats(conn)}
    for phase in phases:
        phase.ready_s = {name: ready[name] for name in phase.procs}
        phase.boot_cpu_s = {name: cpu_seconds(pid) for name, pid in phase.pids.items()}
        phase.rss_mb = {name: rss_mb(pid) for name, pid in phase.pids.items()}
        phase.held = {name: held.get(name, 0) for name in phase.procs}


def saturate(phase: Phase, url: str, args: argparse.Namespace, queries: list[str]) -> Load:
    """The deployment's closed-loop saturation (the others idle meanwhile)."""
    return closed_loop(
        url, phase.shards, args.workspaces, queries, args.clients, args.seconds, phase.requests_key
    )


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


def _shares(text: str) -> list[float]:
    shares = sorted({float(v) for v in text.split(",") if v.strip()})
    if not shares or not all(0 < v <= 1.5 for v in shares):
        raise argparse.ArgumentTypeError("give shares of the saturation, e.g. 0.25,0.5,0.75")
    return shares


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.recall_shards")
    parser.add_argument("--memories", type=int, default=1_000_000)
    parser.add_argument("--workspaces", type=int, default=2_000)
    parser.add_argument("--shards", type=int, default=4)
    parser.add_argument("--embedding", choices=("static", "none"), default="static")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=20.0, help="of each closed loop")
    parser.add_argument("--load-shares", type=_shares, default=[0.25, 0.5, 0.75])
    parser.add_argument("--result-share", type=float, default=0.5)
    parser.add_argument("--answers", type=int, default=3_000, help="per deployment and rate")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--phase-timeout", type=float, default=5_400.0)
    parser.add_argument("--boot-apart", action="store_true")
    parser.add_argument("--one-process", action="store_true")
    args = parser.parse_args(argv)
    if args.result_share not in args.load_shares:
        parser.error("--result-share must be one of --load-shares")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
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
    unsharded = Phase("unsharded", 1)
    sharded = Phase(f"{args.shards} shards", args.shards, args.shards)
    one = [
        Phase(
            f"1 process x {args.shards} shards", args.shards, requests_key=f"{RECALL_REQUESTS}:one"
        )
        for _ in range(args.one_process)
    ]
    phases = [unsharded, sharded, *one]
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            # At once by default: the bootstraps are the run's longest part (~250 us of
            # CPU per memory, 1M held twice), and apart they leave a core idle.
            for group in [[p] for p in phases] if args.boot_apart else [phases]:
                for phase in group:
                    launch(phase, server.url, spec)
                await_ready(group, server.url, args.phase_timeout)
            for phase in phases:
                phase.saturation = saturate(phase, server.url, args, queries)
            rates = {share: share * unsharded.saturation.per_s for share in args.load_shares}
            plan = OpenPlan(rates, args.answers, args.rounds, args.workspaces, args.shards)
            open_rounds(phases, server.url, plan, queries, pauses)
            for phase in phases:
                phase.saturation_after = saturate(phase, server.url, args, queries)
            for phase in phases:
                for name, pid in phase.pids.items():
                    phase.rss_mb[name] = max(phase.rss_mb[name], rss_mb(pid))
            for phase in one:  # its claims would answer for the stopped shard
                stop_phase(phase)
            sharded.no_replica_ms = no_replica(
                sharded.procs[f"shard{args.shards - 1}"],
                redis.Redis.from_url(server.url),
                args,
                queries[0],
            )
        finally:
            for phase in phases:
                stop_phase(phase)
            server.stop()
    report(args, unsharded, sharded, *one)
    return 0


if __name__ == "__main__":
    sys.exit(main())
