"""Recall latency end to end through Redis at 50k memories, with the semantic signal on.

Loads N turns into the embedded graph through the ingest pipeline (offline extractor, real
writer; each memory embedded once with the configured model, the shipped local pair by
default, and turn vectors stored in the graph, as ingest workers do), starts recall worker
replicas as processes (they bootstrap their index and the stored vectors from the graph)
and waits until every replica's heartbeat says ``bootstrapped``. Then client processes
call ``RecallClient.recall``: a closed loop at ``--clients`` (8), whose throughput is the
saturation, then an open loop offered at half that rate; answers flagged ``degraded`` are
counted. Reference in the same run: a Redis PING round trip from the same clients, closed
loop. Also reports each replica's resident memory, where a closed-loop request's CPU goes
(the replicas', the load generator's, the rest of the machine's, per answer) and
time-to-recall (publish a turn, poll recall until it is found) with an ingest worker
running.

Texts are real conversation: the turns of REALTALK (``../shared/data/realtalk``, read at
bench time) and of the project's own retrieval dataset; 500 of them are held back, never
loaded, and their first words are the queries. Beyond the first pass over the texts, a
memory joins two random turns, so no two memories are the same text.

``--profile DIR`` samples the replicas with ``py-spy`` during the closed loop and writes
their collapsed stacks (``recall_replicas_<N>.stacks``) and a summary of them
(``recall_replicas_<N>.txt``: each function's inclusive and own share) into DIR.

    python -m bench.recall_latency [--memories 50000] [--clients 8] [--seconds 10]
        [--embedding local|static|none] [--profile DIR]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import redis
import structlog

from bench.embedding_options import EMBEDDINGS, settings_fields
from bench.proc import cpu_seconds, machine_busy_seconds, rss_mb
from bench.profile_stacks import record, shortened, summarise
from bench.report import percentile, result_line, table
from bench.retrieval_data import DEFAULT_OUT
from bench.retrieval_data import load as load_own
from bench.retrieval_realtalk import load as load_realtalk
from turngraph.app import build_pipeline
from turngraph.clients import build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.producers.connection import open_publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.settings import Settings
from turngraph.workers.recall.replica import process_is_ready

WORKSPACES = 5
SESSIONS = 50
HELD_BACK = 500
"""Turns never loaded; their first QUERY_WORDS words are the queries."""
QUERY_WORDS = 12


def corpus(count: int, seed: int = 7) -> tuple[list[TurnEvent], list[str]]:
    """``count`` turns of real conversation text, and queries from held-back turns."""
    rng = random.Random(seed)
    texts = [t.content for t in load_realtalk(one_timestamp=True).turns]
    texts += [t.content for t in load_own(DEFAULT_OUT)[0]]
    rng.shuffle(texts)
    held, texts = texts[:HELD_BACK], texts[HELD_BACK:]
    queries = [" ".join(text.split()[:QUERY_WORDS]) for text in held]
    start = datetime(2026, 11, 1, tzinfo=UTC)
    turns = []
    for i in range(count):
        session = i % SESSIONS
        text = texts[i] if i < len(texts) else f"{rng.choice(texts)} {rng.choice(texts)}"
        turns.append(
            TurnEvent(
                session_id=f"bench-s{session}",
                workspace=f"bench-w{session % WORKSPACES}",
                user="bench-u",
                turn_index=i // SESSIONS,
                role="user" if i % 2 == 0 else "assistant",
                content=text[:20_000],
                occurred_at=start + timedelta(seconds=i),
                client=ClientInfo(name="bench", version="1"),
            )
        )
    return turns, queries


def settings_for(endpoints: ServiceEndpoints, embedding: str = "local") -> Settings:
    settings = Settings(_env_file=None, log_level="WARNING", **settings_fields(embedding))
    return with_endpoints(settings, endpoints)


def load_graph(settings: Settings, turns: list[TurnEvent]) -> float:
    clients = build_clients(settings)
    pipeline = build_pipeline(clients)
    started = time.perf_counter()
    for i in range(0, len(turns), 1000):
        pipeline.ingest(turns[i : i + 1000])
    clients.close()
    return time.perf_counter() - started


def _client_loop(
    redis_url: str,
    threads: int,
    seconds: float,
    mode: str,
    interval_s: float,
    queries: list[str],
    out: mp.Queue,
) -> None:
    latencies: list[float] = []
    failures = 0
    degraded: Counter[str] = Counter()
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def run(seed: int) -> None:
        nonlocal failures
        rng = random.Random(seed)
        conn = redis.Redis.from_url(redis_url, socket_timeout=5)
        client = RecallClient(conn, deadline_ms=2_000)
        mine: list[float] = []
        bad = 0
        next_at = time.monotonic() + rng.uniform(0, interval_s)
        while time.monotonic() < stop_at:
            if interval_s:  # open loop: a client asks on its own schedule, not when answered
                time.sleep(max(0.0, next_at - time.monotonic()))
                next_at += interval_s
            session = rng.randrange(SESSIONS)
            started = time.perf_counter()
            if mode == "ping":
                conn.ping()
            else:
                response = client.recall(
                    rng.choice(queries),
                    session_id=f"bench-s{session}",
                    workspace=f"bench-w{session % WORKSPACES}",
                    user="bench-u",
                )
                bad += not response.success
                degraded.update(response.degraded)
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(mine)
            failures += bad

    workers = [threading.Thread(target=run, args=(os.getpid() * 100 + i,)) for i in range(threads)]
    cpu_started = time.process_time()
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put((latencies, failures, degraded, time.process_time() - cpu_started))


class Drive(NamedTuple):
    latencies: list[float]
    failures: int
    degraded: Counter[str]
    """The ``degraded`` reasons of the answers (a degraded answer did not take the path
    being measured)."""
    client_cpu_s: float
    """CPU time the load generator itself used (it shares the machine's cores)."""


def drive(
    redis_url: str,
    clients: int,
    seconds: float,
    mode: str,
    queries: list[str],
    interval_s: float = 0.0,
) -> Drive:
    """Run the clients for ``seconds``: a closed loop, or an open one at ``interval_s``."""
    processes = max(1, min(2, clients // 4))
    out: mp.Queue = mp.Queue()
    procs = [
        mp.Process(
            target=_client_loop,
            args=(redis_url, clients // processes, seconds, mode, interval_s, queries, out),
        )
        for _ in range(processes)
    ]
    for proc in procs:
        proc.start()
    total = Drive([], 0, Counter(), 0.0)
    for _ in procs:
        part, bad, reasons, cpu_s = out.get()
        total.latencies.extend(part)
        total.degraded.update(reasons)
        total = total._replace(
            failures=total.failures + bad, client_cpu_s=total.client_cpu_s + cpu_s
        )
    for proc in procs:
        proc.join()
    return total


def wait_until_ready(conn: redis.Redis, pids: list[int], timeout_s: float) -> None:
    """Every replica has read the graph (its heartbeat says ``bootstrapped``). Answering a
    request is not enough: a replica serves at once and answers ``graph_unavailable``
    (lexical over what it has so far) while it bootstraps."""
    host = socket.gethostname()
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if all(process_is_ready(conn, host, pid) for pid in pids):
            return
        time.sleep(0.2)
    raise SystemExit("the recall replicas did not finish bootstrapping")


def time_to_recall(settings: Settings, samples: int) -> list[float]:
    conn = redis.Redis.from_url(str(settings.redis_url), socket_timeout=5)
    client = RecallClient(conn, deadline_ms=1_000)
    results = []
    with open_publisher(settings) as publisher:
        for i in range(samples):
            marker = f"zq{uuid.uuid4().hex[:10]}"
            event = TurnEvent(
                session_id="ttr-s",
                workspace="ttr-w",
                user="ttr-u",
                turn_index=i,
                role="user",
                content=f"The {marker} flag must stay off in production.",
                occurred_at=datetime.now(UTC),
                client=ClientInfo(name="bench"),
            )
            started = time.perf_counter()
            publisher.publish(event)
            while True:
                response = client.recall(
                    marker, session_id="ttr-s", workspace="ttr-w", user="ttr-u"
                )
                if any(event.event_id in r.source_event_ids for r in response.results):
                    break
                if time.perf_counter() - started > 10:
                    raise SystemExit("a published turn was not recallable within 10 s")
            results.append((time.perf_counter() - started) * 1000)
    return results


def profile_start(
    out: Path | None, replicas: list[subprocess.Popen[bytes]], seconds: float
) -> list[tuple[subprocess.Popen[bytes], Path]]:
    """``py-spy`` on each replica for the closed loop's ``seconds`` (``--profile``)."""
    if out is None:
        return []
    out.mkdir(parents=True, exist_ok=True)
    spies = []
    for replica in replicas:
        stacks = out / f"recall_replica_{replica.pid}.stacks"
        spies.append((record(replica.pid, seconds, stacks), stacks))
    return spies


def profile_end(
    out: Path | None, spies: list[tuple[subprocess.Popen[bytes], Path]], memories: int
) -> None:
    """The replicas' stacks in one file, and their summary beside it."""
    if out is None:
        return
    stacks = out / f"recall_replicas_{memories}.stacks"
    with stacks.open("w") as merged:
        for spy, part in spies:
            spy.wait(timeout=60)
            if part.is_file():
                merged.write(shortened(part.read_text()))
                part.unlink()
    summary = out / f"recall_replicas_{memories}.txt"
    summary.write_text(summarise(stacks))
    print(f"replica profile: {summary} ({stacks.name} beside it)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--ttr-samples", type=int, default=20)
    parser.add_argument("--embedding", choices=tuple(EMBEDDINGS), default="local")
    parser.add_argument("--profile", type=Path, default=None, metavar="DIR")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    turns, queries = corpus(args.memories)
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(Path(tmp)) as endpoints:
        settings = settings_for(endpoints, args.embedding)
        load_s = load_graph(settings, turns)
        env = {
            **os.environ,
            **endpoints.as_env(),
            "TURNGRAPH_LOG_LEVEL": "WARNING",
            **EMBEDDINGS[args.embedding],
        }
        command = [sys.executable, "-m", "turngraph.cli", "worker"]
        started = time.perf_counter()
        replicas = [subprocess.Popen([*command, "recall"], env=env) for _ in range(args.replicas)]
        ingest = subprocess.Popen([*command, "ingest"], env=env)
        conn = redis.Redis.from_url(endpoints.redis_url)
        url = endpoints.redis_url
        try:
            wait_until_ready(conn, [proc.pid for proc in replicas], 1_800)
            ready_s = time.perf_counter() - started
            memory = [rss_mb(proc.pid) for proc in replicas]
            ping = drive(url, args.clients, args.seconds / 2, "ping", queries).latencies
            replicas_cpu = [cpu_seconds(proc.pid) for proc in replicas]
            spies = profile_start(args.profile, replicas, args.seconds)
            busy = machine_busy_seconds()
            closed_run = drive(url, args.clients, args.seconds, "recall", queries)
            busy = machine_busy_seconds() - busy
            profile_end(args.profile, spies, args.memories)
            replicas_cpu = [
                cpu_seconds(p.pid) - c for p, c in zip(replicas, replicas_cpu, strict=True)
            ]
            closed, closed_failures = closed_run.latencies, closed_run.failures
            saturation = len(closed) / args.seconds
            interval = args.clients / (saturation / 2)  # per client, half the saturation
            open_run = drive(url, args.clients, args.seconds, "recall", queries, interval)
            lat, failures = open_run.latencies, open_run.failures
            degraded = closed_run.degraded + open_run.degraded
            ttr = time_to_recall(settings, args.ttr_samples)
        finally:
            for proc in [*replicas, ingest]:
                proc.terminate()
            for proc in [*replicas, ingest]:
                proc.wait(timeout=30)

    def row(name: str, values: list[float], seconds: float) -> list[object]:
        return [
            name,
            len(values),
            percentile(values, 50),
            percentile(values, 95),
            percentile(values, 99),
            len(values) / seconds if seconds else 0.0,
        ]

    rows = [
        row(f"redis PING (reference), {args.clients} clients closed loop", ping, args.seconds / 2),
        row(f"recall, {args.clients} clients closed loop (saturation)", closed, args.seconds),
        row("recall, open loop at half saturation", lat, args.seconds),
        row("time to recall", ttr, 0.0),
    ]
    print(
        f"{args.memories} turns loaded in {load_s:.1f} s; embedding: {args.embedding}; "
        f"{args.replicas} replicas ready after {ready_s:.1f} s; replica RSS MB: "
        f"{[round(m) for m in memory]}; {len(queries)} queries from held-back turns"
    )
    print(table(["measure (ms)", "n", "p50", "p95", "p99", "per_s"], rows))
    print(f"degraded answers: {dict(degraded) or 'none'}")
    per_request = 1000 / max(1, len(closed))
    cpu_rows = [
        ["recall replicas", sum(replicas_cpu) * per_request],
        ["load generator (clients)", closed_run.client_cpu_s * per_request],
        ["rest (Redis, ingest worker, graph server, other load)",
         (busy - sum(replicas_cpu) - closed_run.client_cpu_s) * per_request],
        ["machine, all cores", busy * per_request],
    ]  # fmt: skip
    print(f"CPU per request in the closed loop ({os.cpu_count()} cores):")
    print(table(["where", "cpu_ms_per_request"], cpu_rows))
    print(
        result_line(
            "recall_latency",
            memories=args.memories,
            embedding=args.embedding,
            clients=args.clients,
            closed_p50_ms=round(percentile(closed, 50), 2),
            closed_p99_ms=round(percentile(closed, 99), 2),
            saturation_per_s=round(saturation),
            open_p50_ms=round(percentile(lat, 50), 2),
            open_p99_ms=round(percentile(lat, 99), 2),
            offered_per_s=round(len(lat) / args.seconds),
            ping_p50_ms=round(percentile(ping, 50), 2),
            ping_p99_ms=round(percentile(ping, 99), 2),
            failures=failures + closed_failures,
            degraded=sum(degraded.values()),
            replica_rss_mb=round(max(memory)),
            replica_cpu_ms_per_request=round(sum(replicas_cpu) * per_request, 3),
            client_cpu_ms_per_request=round(closed_run.client_cpu_s * per_request, 3),
            time_to_recall_p95_ms=round(percentile(ttr, 95), 1),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
