"""Ingest throughput into the graph with the offline extractor: one worker, then two.

Starts the embedded services, enqueues N realistic turns through the bounded queue, runs
`turngraph worker ingest --burst` processes and times them until every turn is marked
ingested. The same run's reference is the empty worker (``bench/ingest_empty_worker.py``):
the same process, admission and RQ batch jobs over the same turns, with a pipeline that
does nothing; ``one_worker_vs_empty`` is one worker's turns/s over the empty worker's.
The graph server's CPU is read whole and for its JIT compiler threads (``of_which_jit``,
``graph_jit_cpu_ms_per_turn``): in runs of a few thousand turns most of it is HotSpot
still compiling the server's code (docs/operations.md, "Where a turn's time goes").

Two figures per engine, side by side: **cold**, the first one-worker run of a fresh server
(after a 200-turn warm-up), what a server just started costs; and **steady**, the same
one-worker run repeated in the same server (``--steady-rounds`` more times, after the
two-worker and empty runs; the graph emptied before each run), the last one reported: a
production server runs for days, so the JIT's one-off compilation of the write path is
start-up cost, and the per-turn cost it settles at is the steady figure (``*_steady`` in
the ``RESULT`` line). ``writes_retried``: the write transactions the driver ran again in
that run (two workers' batches conflicting on the same records), counted from the
workers' ``graph_write_retried`` log lines. Prints a table and ends with ``RESULT ingest …``.

    python -m bench.ingest [--turns 3000] [--embedding local|static|none]
                           [--graph arcadedb,neo4j] [--steady-rounds 2]

Both graph engines by default, one after the other in the same run (Neo4j is fetched
through Maven into the run's folder first: Java 17+ and Maven needed).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import neo4j
import redis

from bench.embedding_options import EMBEDDINGS
from bench.ingest_empty_worker import turns_done
from bench.proc import ThreadsClock, cpu_seconds
from bench.report import result_line, table
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.workers.graph.retry import RETRIED_EVENT

TEMPLATES = (
    "The test in tests/test_{mod}.py fails on branch feat/{mod}-{n}; see issue #{n}.",
    "I changed `{mod}_handler` in src/{mod}/handler.py and pushed commit {sha}.",
    "decision: we use Redis streams for {mod} events instead of polling (PR #{n}).",
    "Let's go with pytest fixtures for the {mod} service; docker compose is too slow here.",
    "The stack trace points at src/{mod}/client.py line {n}: a timeout talking to Postgres.",
    "preference: (user) keep {mod} examples short, with type hints.",
    "Why does the {mod} worker retry forever? Look at PLAN-{n} and the retry policy.",
)
WORKER = ("-m", "turngraph.cli", "worker", "ingest", "--burst")
EMPTY_WORKER = ("-m", "bench.ingest_empty_worker")
"""The reference: the same process and batch jobs, a pipeline that does nothing."""
Figures = tuple[float, float, float, float, int]
"""One run: seconds, the workers' CPU s, the graph server's CPU s, of which its JIT's,
and the write transactions the driver ran again (``graph_write_retried`` in the workers'
logs: two workers' batches conflicting)."""

JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
"""HotSpot's JIT compiler threads (``comm`` is cut at 15 characters), in both engines."""

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
    command: tuple[str, ...] = WORKER,
    *,
    keep_graph: bool = False,
) -> Figures:
    """(seconds until the last turn is marked ingested, or for the empty worker ran by a
    finished job; workers' CPU s; graph server CPU s; the part of it its JIT compiler
    threads used; the writes the driver ran again). Redis is emptied first, and the graph
    too unless ``keep_graph`` (``bench.ingest_growth``)."""
    conn = redis.Redis.from_url(endpoints.redis_url)
    if keep_graph:
        conn.flushdb()
    else:
        reset(endpoints, conn)
    queue = BoundedQueue(conn, max_length=len(turns) + 1)
    queue.enqueue_many(turns)
    env = {
        **os.environ,
        **endpoints.as_env(),
        **EMBEDDINGS[embedding],
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }
    jit = ThreadsClock(graph_pid, JIT_THREADS)
    jit.start()
    graph_cpu = cpu_seconds(graph_pid)
    started = time.perf_counter()
    procs = [
        subprocess.Popen([sys.executable, *command], env=env, stderr=subprocess.PIPE, text=True)
        for _ in range(workers)
    ]
    retried = [0] * len(procs)  # each reader counts its own worker's
    readers = [
        threading.Thread(target=_relay, args=(proc, retried, i), daemon=True)
        for i, proc in enumerate(procs)
    ]
    for reader in readers:
        reader.start()
    last_cpu = dict.fromkeys((proc.pid for proc in procs), 0.0)
    while any(proc.poll() is None for proc in procs):
        for proc in procs:
            if proc.returncode is None:
                with contextlib.suppress(OSError):  # it ended meanwhile
                    last_cpu[proc.pid] = cpu_seconds(proc.pid)
        jit.sample()
        time.sleep(0.05)  # sampling the children's CPU time until they exit
    elapsed = time.perf_counter() - started
    graph_cpu = cpu_seconds(graph_pid) - graph_cpu
    for reader in readers:
        reader.join()
    jit.sample()
    if command == EMPTY_WORKER:
        missing = len(turns) - turns_done(conn)
    else:
        missing = sum(not is_ingested(conn, t.event_id) for t in turns)
    if missing:
        raise SystemExit(f"{missing} turns were not ingested")
    return elapsed, sum(last_cpu.values()), graph_cpu, jit.seconds, sum(retried)


def _relay(proc: subprocess.Popen[str], retried: list[int], slot: int) -> None:
    """Pass a worker's log lines on to this process's stderr, counting the driver's reruns
    in ``retried[slot]``."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if RETRIED_EVENT in line:
            retried[slot] += 1
        sys.stderr.write(line)


RUNS = (("one", WORKER, 1), ("two", WORKER, 2), ("empty", EMPTY_WORKER, 1))
"""Each measured run: its name, the worker processes' command and how many run (the
empty worker last: the one-worker run follows the warm-up, as before it was added)."""

STEADY = "steady"
"""The last of the one-worker runs repeated after :data:`RUNS` in the same server."""


def measure(
    engine: str, turns: list[TurnEvent], embedding: str, steady_rounds: int = 2
) -> dict[str, Figures]:
    """One and two workers and the empty worker on ``engine`` (its own data folder), after
    a warm-up run, then the one-worker run ``steady_rounds`` more times in the same server
    (:data:`STEADY`: the last; none when 0); each run's :data:`Figures`."""
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp), engine)
        with services as endpoints:
            graph_pid = services.graph.pid
            assert graph_pid is not None
            warm = turns[: min(200, len(turns))]
            run_workers(endpoints, 1, warm, graph_pid, embedding)  # warm the JIT
            runs = {
                name: run_workers(endpoints, workers, turns, graph_pid, embedding, command)
                for name, command, workers in RUNS
            }
            for k in range(1, steady_rounds + 1):
                name = STEADY if k == steady_rounds else f"repeat {k}"
                runs[name] = run_workers(endpoints, 1, turns, graph_pid, embedding)
            return runs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--embedding", choices=tuple(EMBEDDINGS), default="local")
    parser.add_argument(
        "--graph",
        default="arcadedb,neo4j",
        help="graph engines to measure, one after the other in this run (comma-separated)",
    )
    parser.add_argument(
        "--steady-rounds",
        type=int,
        default=2,
        help="one-worker runs repeated in the same server after the cold runs; the last is "
        "the steady figure (0: cold only)",
    )
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.graph.split(",") if e.strip()]
    turns = make_turns(args.turns)
    figures = {
        engine: measure(engine, turns, args.embedding, args.steady_rounds) for engine in engines
    }
    n = len(turns)
    ms = 1000 / n
    print(f"cores: {os.cpu_count()}; embedding: {args.embedding}")
    print(
        "cold: a fresh server's first runs; steady: the one-worker run repeated in the same "
        f"server, the last of {args.steady_rounds} (its JIT has compiled the write path)"
    )
    labels = {"one": "1 cold", "two": "2 cold", "empty": "empty", STEADY: "1 steady"}
    rows = []
    for engine, runs in figures.items():
        for name, (seconds, cpu, graph, jit, retries) in runs.items():
            label = labels.get(name, f"1 {name}")
            rows.append(
                [engine, label, n, seconds, n / seconds, cpu * ms, graph * ms, jit * ms,
                 (cpu + graph) / seconds, retries]
            )  # fmt: skip
    headers = ["graph", "workers", "turns", "seconds", "turns_per_s", "worker_cpu_ms_per_turn"]
    headers += ["graph_cpu_ms_per_turn", "of_which_jit", "cores_busy", "writes_retried"]
    print(table(headers, rows))
    result: dict[str, float | int | str] = {"turns": n, "embedding": args.embedding}
    for engine, runs in figures.items():
        one, two, empty = runs["one"], runs["two"], runs["empty"]
        result[f"{engine}_one_worker_turns_per_s"] = round(n / one[0], 1)
        result[f"{engine}_two_workers_turns_per_s"] = round(n / two[0], 1)
        result[f"{engine}_two_workers_writes_retried"] = two[4]
        result[f"{engine}_worker_cpu_ms_per_turn"] = round(one[1] * ms, 3)
        result[f"{engine}_graph_cpu_ms_per_turn"] = round(one[2] * ms, 3)
        result[f"{engine}_graph_jit_cpu_ms_per_turn"] = round(one[3] * ms, 3)
        result[f"{engine}_empty_worker_turns_per_s"] = round(n / empty[0], 1)
        result[f"{engine}_empty_worker_cpu_ms_per_turn"] = round(empty[1] * ms, 3)
        result[f"{engine}_one_worker_vs_empty"] = round(empty[0] / one[0], 3)
        if STEADY in runs:
            steady = runs[STEADY]
            result[f"{engine}_one_worker_turns_per_s_steady"] = round(n / steady[0], 1)
            result[f"{engine}_worker_cpu_ms_per_turn_steady"] = round(steady[1] * ms, 3)
            result[f"{engine}_graph_cpu_ms_per_turn_steady"] = round(steady[2] * ms, 3)
            result[f"{engine}_graph_jit_cpu_ms_per_turn_steady"] = round(steady[3] * ms, 3)
    if {"arcadedb", "neo4j"} <= figures.keys():
        result["neo4j_vs_arcadedb_turns_per_s"] = round(
            figures["arcadedb"]["one"][0] / figures["neo4j"]["one"][0], 2
        )
    print(result_line("ingest", **result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
