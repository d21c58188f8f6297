"""Ingest throughput into the graph with the offline extractor: one worker, then two.

Starts the embedded services, enqueues N realistic turns through the bounded queue, runs
`turngraph worker ingest --burst` processes and times them until every turn is marked
ingested. Prints a table and ends with ``RESULT ingest …``.

    python -m bench.ingest [--turns 3000] [--embedding local|static|none]
                           [--graph arcadedb,neo4j]

Both graph engines by default, one after the other in the same run (Neo4j is fetched
through Maven into the run's folder first: Java 17+ and Maven needed).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import neo4j
import redis

from bench.embedding_options import EMBEDDINGS
from bench.proc import cpu_seconds
from bench.report import result_line, table
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.schemas.turn_event import ClientInfo, TurnEvent

TEMPLATES = (
    "The test in tests/test_{mod}.py fails on branch feat/{mod}-{n}; see issue #{n}.",
    "I changed `{mod}_handler` in src/{mod}/handler.py and pushed commit {sha}.",
    "decision: we use Redis streams for {mod} events instead of polling (PR #{n}).",
    "Let's go with pytest fixtures for the {mod} service; docker compose is too slow here.",
    "The stack trace points at src/{mod}/client.py line {n}: a timeout talking to Postgres.",
    "preference: (user) keep {mod} examples short, with type hints.",
    "Why does the {mod} worker retry forever? Look at PLAN-{n} and the retry policy.",
)
MODULES = ("billing", "auth", "search", "ingest", "cache", "parser", "export", "sync")


def make_turns(count: int, sessions: int = 50, seed: int = 7) -> list[TurnEvent]:
    rng = random.Random(seed)
    start = datetime(2026, 11, 1, tzinfo=UTC)
    turns = []
    for i in range(count):
        session = i % sessions
        text = rng.choice(TEMPLATES).format(
            mod=rng.choice(MODULES), n=rng.randint(1, 999), sha=f"{rng.getrandbits(40):010x}"
        )
        turns.append(
            TurnEvent(
                session_id=f"bench-s{session}",
                workspace=f"bench-w{session % 5}",
                user="bench-u",
                turn_index=i // sessions,
                role="user" if i % 2 == 0 else "assistant",
                content=text,
                occurred_at=start + timedelta(seconds=i),
                client=ClientInfo(name="bench", version="1"),
            )
        )
    return turns


def reset(endpoints: ServiceEndpoints, conn: redis.Redis) -> None:
    conn.flushdb()
    with neo4j.GraphDatabase.driver(
        endpoints.graph_uri, auth=(endpoints.graph_user, endpoints.graph_password)
    ) as driver:
        driver.execute_query("MATCH (n) DETACH DELETE n", database_=endpoints.graph_database)


def run_workers(
    endpoints: ServiceEndpoints,
    workers: int,
    turns: list[TurnEvent],
    graph_pid: int,
    embedding: str = "local",
) -> tuple[float, float, float]:
    """(seconds until the last turn is marked ingested, workers' CPU s, graph server CPU s)."""
    conn = redis.Redis.from_url(endpoints.redis_url)
    reset(endpoints, conn)
    queue = BoundedQueue(conn, max_length=len(turns) + 1)
    queue.enqueue_many(turns)
    env = {
        **os.environ,
        **endpoints.as_env(),
        **EMBEDDINGS[embedding],
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }
    graph_cpu = cpu_seconds(graph_pid)
    started = time.perf_counter()
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "turngraph.cli", "worker", "ingest", "--burst"], env=env
        )
        for _ in range(workers)
    ]
    worker_cpu = 0.0
    for proc in procs:
        while proc.poll() is None:
            worker_cpu_now = cpu_seconds(proc.pid)
            time.sleep(0.05)  # sampling the child's CPU time until it exits
        worker_cpu += worker_cpu_now
    elapsed = time.perf_counter() - started
    graph_cpu = cpu_seconds(graph_pid) - graph_cpu
    missing = sum(not is_ingested(conn, t.event_id) for t in turns)
    if missing:
        raise SystemExit(f"{missing} turns were not ingested")
    return elapsed, worker_cpu, graph_cpu


def measure(engine: str, turns: list[TurnEvent], embedding: str) -> dict[str, float]:
    """One and two workers on ``engine`` (its own data folder), after a warm-up run."""
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp), engine)
        with services as endpoints:
            graph_pid = services.graph.pid
            assert graph_pid is not None
            warm = turns[: min(200, len(turns))]
            run_workers(endpoints, 1, warm, graph_pid, embedding)  # warm the JIT
            one, one_cpu, one_graph = run_workers(endpoints, 1, turns, graph_pid, embedding)
            two, two_cpu, two_graph = run_workers(endpoints, 2, turns, graph_pid, embedding)
    return {
        "one_s": one,
        "one_cpu": one_cpu,
        "one_graph": one_graph,
        "two_s": two,
        "two_cpu": two_cpu,
        "two_graph": two_graph,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--embedding", choices=tuple(EMBEDDINGS), default="local")
    parser.add_argument(
        "--graph",
        default="arcadedb,neo4j",
        help="graph engines to measure, one after the other in this run (comma-separated)",
    )
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.graph.split(",") if e.strip()]
    turns = make_turns(args.turns)
    figures = {engine: measure(engine, turns, args.embedding) for engine in engines}
    n = len(turns)
    print(f"cores: {os.cpu_count()}; embedding: {args.embedding}")
    rows = []
    for engine, f in figures.items():
        for workers, key in ((1, "one"), (2, "two")):
            seconds, cpu, graph = f[f"{key}_s"], f[f"{key}_cpu"], f[f"{key}_graph"]
            rows.append(
                [engine, workers, n, seconds, n / seconds, cpu * 1000 / n, graph * 1000 / n,
                 (cpu + graph) / seconds]
            )  # fmt: skip
    headers = ["graph", "workers", "turns", "seconds", "turns_per_s", "worker_cpu_ms_per_turn"]
    print(table([*headers, "graph_cpu_ms_per_turn", "cores_busy"], rows))
    result: dict[str, float | int | str] = {"turns": n, "embedding": args.embedding}
    for engine, f in figures.items():
        result[f"{engine}_one_worker_turns_per_s"] = round(n / f["one_s"], 1)
        result[f"{engine}_two_workers_turns_per_s"] = round(n / f["two_s"], 1)
        result[f"{engine}_worker_cpu_ms_per_turn"] = round(f["one_cpu"] / n * 1000, 3)
        result[f"{engine}_graph_cpu_ms_per_turn"] = round(f["one_graph"] / n * 1000, 3)
    if {"arcadedb", "neo4j"} <= figures.keys():
        result["neo4j_vs_arcadedb_turns_per_s"] = round(
            figures["arcadedb"]["one_s"] / figures["neo4j"]["one_s"], 2
        )
    print(result_line("ingest", **result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
