"""The embedded graph server's start with and without its class cache
(``turngraph/embedded/class_cache.py``), alternated in one run.

``python -m bench.graph_start [--runs N]``: a fresh cache folder; one first run (the JVM
records what it loads; its stop writes the configuration), then N starts without the
cache (the reference) alternated with N starts using it (the first of them makes the
cache from the configuration, timed on its own). Each start is timed from ``start()`` to
the database answering a query, with the JVM's CPU at that moment; the stop is timed too.
Prints a table and ``RESULT graph_start ...``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import psutil

from bench.report import percentile, result_line, table
from turngraph.embedded.graph_server import GraphServer


def _start_stop(server: GraphServer) -> tuple[float, float, float]:
    """Seconds to ready, the JVM's CPU seconds then, seconds to stop."""
    began = time.perf_counter()
    server.start()
    ready_s = time.perf_counter() - began
    assert server.pid is not None
    times = psutil.Process(server.pid).cpu_times()
    began = time.perf_counter()
    server.stop()
    return ready_s, times.user + times.system, time.perf_counter() - began


def _summary(runs: list[tuple[float, float, float]]) -> tuple[float, float, float, float]:
    """Ready p50 and max, JVM CPU p50, stop p50."""
    return (
        percentile([r[0] for r in runs], 50),
        max(r[0] for r in runs),
        percentile([r[1] for r in runs], 50),
        percentile([r[2] for r in runs], 50),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="starts of each kind")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-graph-start-") as tmp:
        root = Path(tmp)
        data, cache_dir = root / "graph", root / "cache"
        record = _start_stop(GraphServer(data, class_cache_dir=cache_dir))
        cached = GraphServer(data, class_cache_dir=cache_dir)
        assert cached.class_cache is not None
        began = time.perf_counter()
        cached.class_cache.start_options()  # makes the cache from the recorded configuration
        create_s = time.perf_counter() - began
        plain: list[tuple[float, float, float]] = []
        used: list[tuple[float, float, float]] = []
        for _ in range(args.runs):
            plain.append(_start_stop(GraphServer(data, class_cache=False)))
            used.append(_start_stop(cached))
    stats = {name: _summary(runs) for name, runs in (("without", plain), ("with", used))}
    rows: list[list[object]] = [
        ["without the cache", *stats["without"]],
        ["with the cache", *stats["with"]],
        ["first run (records)", record[0], record[0], record[1], record[2]],
    ]
    print(table(["start", "ready p50 s", "ready max s", "JVM CPU p50 s", "stop p50 s"], rows))
    print(f"making the cache from the recording: {create_s:.2f} s")
    without, with_cache = stats["without"], stats["with"]
    print(
        result_line(
            "graph_start",
            runs=args.runs,
            ready_s_without=without[0],
            ready_s_with=with_cache[0],
            ready_ratio=with_cache[0] / without[0],
            cpu_s_without=without[2],
            cpu_s_with=with_cache[2],
            cpu_ratio=with_cache[2] / without[2],
            first_stop_s=record[2],
            create_s=create_s,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
