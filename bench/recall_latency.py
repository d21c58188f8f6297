"""Recall latency end to end through Redis at 50k memories, 50 concurrent clients.

Loads N turns into the embedded graph (offline extractor, real writer), starts recall
worker replicas as processes (they bootstrap their index from the graph), then runs
client processes x threads that each call ``RecallClient.recall`` in a loop. Reference in
the same run: a Redis PING round trip from the same clients. Also reports each replica's
resident memory and time-to-recall (publish a turn, poll recall until it is found) with
an ingest worker running.

    python -m bench.recall_latency [--memories 50000] [--clients 50] [--seconds 10]
"""

from __future__ import annotations

import argparse
import logging
import multiprocessing as mp
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path

import redis
import structlog

from bench.ingest import MODULES, make_turns
from bench.report import percentile, result_line, table
from producers.recall_client import RecallClient
from schemas.turn_event import ClientInfo, TurnEvent
from turngraph.app import build_pipeline
from turngraph.clients import build_clients, build_publisher, with_endpoints
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.settings import Settings

WORDS = (*MODULES, "retry", "timeout", "handler", "fixtures", "streams", "Postgres", "branch")
WORKSPACES = 5
SESSIONS = 50


def settings_for(endpoints: ServiceEndpoints) -> Settings:
    return with_endpoints(Settings(_env_file=None, log_level="WARNING"), endpoints)


def load_graph(settings: Settings, count: int) -> float:
    clients = build_clients(settings)
    pipeline = build_pipeline(clients)
    turns = make_turns(count, sessions=SESSIONS)
    started = time.perf_counter()
    for i in range(0, len(turns), 1000):
        pipeline.ingest(turns[i : i + 1000])
    clients.close()
    return time.perf_counter() - started


def _client_loop(
    redis_url: str, threads: int, seconds: float, mode: str, interval_s: float, out: mp.Queue
) -> None:
    latencies: list[float] = []
    failures = 0
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
                    f"what did we decide about the {rng.choice(WORDS)} {rng.choice(WORDS)}?",
                    session_id=f"bench-s{session}",
                    workspace=f"bench-w{session % WORKSPACES}",
                    user="bench-u",
                )
                bad += not response.success
            mine.append((time.perf_counter() - started) * 1000)
        with lock:
            latencies.extend(mine)
            failures += bad

    workers = [threading.Thread(target=run, args=(os.getpid() * 100 + i,)) for i in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    out.put((latencies, failures))


def drive(
    redis_url: str, clients: int, seconds: float, mode: str, interval_s: float = 0.0
) -> tuple[list[float], int]:
    processes = max(1, min(5, clients // 10))
    out: mp.Queue = mp.Queue()
    procs = [
        mp.Process(
            target=_client_loop,
            args=(redis_url, clients // processes, seconds, mode, interval_s, out),
        )
        for _ in range(processes)
    ]
    for proc in procs:
        proc.start()
    latencies: list[float] = []
    failures = 0
    for _ in procs:
        part, bad = out.get()
        latencies.extend(part)
        failures += bad
    for proc in procs:
        proc.join()
    return latencies, failures


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def wait_until_ready(conn: redis.Redis, timeout_s: float) -> None:
    """A recall replica is ready once it answers a request."""
    client = RecallClient(conn, deadline_ms=1_000)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if client.recall("ready?").success:
            return
    raise SystemExit("recall worker did not become ready")


def time_to_recall(settings: Settings, samples: int) -> list[float]:
    conn = redis.Redis.from_url(str(settings.redis_url), socket_timeout=5)
    client = RecallClient(conn, deadline_ms=1_000)
    results = []
    with build_publisher(settings) as publisher:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--memories", type=int, default=50_000)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--replicas", type=int, default=2)
    parser.add_argument("--ttr-samples", type=int, default=20)
    parser.add_argument(
        "--rate-per-client",
        type=float,
        default=4.0,
        help="requests per second each client sends (open loop); the closed-loop row "
        "shows the saturation throughput",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.WARNING))
    with tempfile.TemporaryDirectory() as tmp, EmbeddedServices(Path(tmp)) as endpoints:
        settings = settings_for(endpoints)
        load_s = load_graph(settings, args.memories)
        env = {**os.environ, **endpoints.as_env(), "TURNGRAPH_LOG_LEVEL": "WARNING"}
        command = [sys.executable, "-m", "turngraph.cli", "worker"]
        started = time.perf_counter()
        replicas = [subprocess.Popen([*command, "recall"], env=env) for _ in range(args.replicas)]
        ingest = subprocess.Popen([*command, "ingest"], env=env)
        conn = redis.Redis.from_url(endpoints.redis_url)
        try:
            wait_until_ready(conn, 300)
            ready_s = time.perf_counter() - started
            memory = [rss_mb(proc.pid) for proc in replicas]
            ping, _ = drive(endpoints.redis_url, args.clients, args.seconds / 2, "ping")
            interval = 1 / args.rate_per_client
            lat, failures = drive(
                endpoints.redis_url, args.clients, args.seconds, "recall", interval
            )
            closed, _ = drive(endpoints.redis_url, args.clients, args.seconds / 2, "recall")
            ttr = time_to_recall(settings, args.ttr_samples)
        finally:
            for proc in [*replicas, ingest]:
                proc.terminate()
            for proc in [*replicas, ingest]:
                proc.wait(timeout=30)
    rows = [
        [
            "redis PING (reference)",
            len(ping),
            percentile(ping, 50),
            percentile(ping, 95),
            percentile(ping, 99),
            len(ping) / (args.seconds / 2),
        ],
        [
            f"recall, {args.clients} clients x {args.rate_per_client:g}/s",
            len(lat),
            percentile(lat, 50),
            percentile(lat, 95),
            percentile(lat, 99),
            len(lat) / args.seconds,
        ],
        [
            "recall, closed loop (saturation)",
            len(closed),
            percentile(closed, 50),
            percentile(closed, 95),
            percentile(closed, 99),
            len(closed) / (args.seconds / 2),
        ],
        [
            "time to recall",
            len(ttr),
            percentile(ttr, 50),
            percentile(ttr, 95),
            percentile(ttr, 99),
            0.0,
        ],
    ]
    print(
        f"{args.memories} turns loaded in {load_s:.1f} s; {args.replicas} replicas ready "
        f"after {ready_s:.1f} s; replica RSS MB: {[round(m) for m in memory]}"
    )
    print(table(["measure (ms)", "n", "p50", "p95", "p99", "per_s"], rows))
    print(
        result_line(
            "recall_latency",
            memories=args.memories,
            clients=args.clients,
            p50_ms=round(percentile(lat, 50), 2),
            p95_ms=round(percentile(lat, 95), 2),
            p99_ms=round(percentile(lat, 99), 2),
            offered_per_s=round(len(lat) / args.seconds),
            saturation_per_s=round(len(closed) / (args.seconds / 2)),
            ping_p50_ms=round(percentile(ping, 50), 2),
            ping_p99_ms=round(percentile(ping, 99), 2),
            failures=failures,
            replica_rss_mb=round(max(memory)),
            time_to_recall_p95_ms=round(percentile(ttr, 95), 1),
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
