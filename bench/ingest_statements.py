"""Graph server CPU per statement of the ingest path, one process, batch by batch.

Starts the embedded services on each engine, builds the ingest pipeline as a worker does
(schema, extractor, embedding model) and ingests ``--turns`` bench turns in batches of
``--batch``, reading the graph server's CPU (``/proc``) around every statement, commit
and read the driver sends. The driver is synchronous and alone on the server, so each
delta is that statement's (plus the server's background threads meanwhile: GC, and the
JIT compiler, which in runs this short is most of it: its threads' CPU is printed per
batch). Prints the graph CPU per batch and its JIT's, then per statement (the warm
batches: after ``--warm``), and ``RESULT ingest_statements …``.

    python -m bench.ingest_statements [--turns 3000] [--batch 100] [--warm 10]
                                      [--embedding local] [--graph arcadedb,neo4j]
                                      [--drop-index NAME ...]
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import neo4j
from neo4j._sync.work.session import Session
from neo4j._sync.work.transaction import TransactionBase

from bench.embedding_options import settings_fields
from bench.ingest import JIT_THREADS, make_turns
from bench.proc import ThreadsClock, cpu_seconds
from bench.report import result_line, table
from turngraph.app import build_pipeline
from turngraph.clients import build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.logs import configure_logging
from turngraph.settings import LogFormat, Settings

_SPACE = re.compile(r"\s+")


def statement_name(query: object) -> str:
    """The statement's first words: enough to tell the hot path's statements apart."""
    return _SPACE.sub(" ", str(query)).strip()[:100]


class StatementClock:
    """Graph server CPU and wall time per statement text, while :meth:`installed`."""

    def __init__(self, graph_pid: int) -> None:
        self.graph_pid = graph_pid
        self.cpu: dict[str, float] = defaultdict(float)
        self.wall: dict[str, float] = defaultdict(float)
        self.calls: dict[str, int] = defaultdict(int)
        self.recording = True
        self.inside_query = False
        self.first = ""

    def add(self, name: str, cpu: float, wall: float) -> None:
        if self.recording:
            self.cpu[name] += cpu
            self.wall[name] += wall
            self.calls[name] += 1

    @contextmanager
    def timed(self, name: str) -> Iterator[None]:
        cpu, wall = cpu_seconds(self.graph_pid), time.perf_counter()
        yield
        self.add(name, cpu_seconds(self.graph_pid) - cpu, time.perf_counter() - wall)

    @contextmanager
    def installed(self) -> Iterator[None]:
        """Patch the driver's transaction run, managed writes and ``execute_query``."""
        clock = self
        run, execute_write = TransactionBase.run, Session.execute_write
        execute_query = neo4j.Driver.execute_query

        def timed_run(tx: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            if clock.inside_query:  # execute_query's own run: timed around the call
                return run(tx, query, *args, **kwargs)
            clock.first = clock.first or statement_name(query)
            with clock.timed(statement_name(query)):
                result = run(tx, query, *args, **kwargs)
                records = list(result)
                summary = result.consume()
            return _Buffered(records, summary)

        def timed_write(session: Any, work: Callable[..., Any], *args: Any, **kw: Any) -> Any:
            inside: dict[str, float] = {}

            def counted(tx: Any, *a: Any, **k: Any) -> Any:
                before = sum(clock.cpu.values()), sum(clock.wall.values())
                clock.first = ""
                out = work(tx, *a, **k)
                inside["cpu"] = sum(clock.cpu.values()) - before[0]
                inside["wall"] = sum(clock.wall.values()) - before[1]
                return out

            cpu, wall = cpu_seconds(clock.graph_pid), time.perf_counter()
            out = execute_write(session, counted, *args, **kw)
            clock.add(
                f"(begin + commit) {clock.first[:60]}",
                cpu_seconds(clock.graph_pid) - cpu - inside.get("cpu", 0.0),
                time.perf_counter() - wall - inside.get("wall", 0.0),
            )
            return out

        def timed_query(driver: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            clock.inside_query = True
            try:
                with clock.timed("(auto) " + statement_name(query)):
                    return execute_query(driver, query, *args, **kwargs)
            finally:
                clock.inside_query = False

        TransactionBase.run = timed_run  # type: ignore[method-assign,assignment]
        Session.execute_write = timed_write  # type: ignore[method-assign,assignment]
        neo4j.Driver.execute_query = timed_query  # type: ignore[method-assign,assignment]
        try:
            yield
        finally:
            TransactionBase.run = run  # type: ignore[method-assign]
            Session.execute_write = execute_write  # type: ignore[method-assign]
            neo4j.Driver.execute_query = execute_query  # type: ignore[method-assign]


class _Buffered:
    """A consumed result: its records and summary, for callers that iterate or consume."""

    def __init__(self, records: list[neo4j.Record], summary: Any) -> None:
        self._records = records
        self._summary = summary

    def __iter__(self) -> Iterator[neo4j.Record]:
        return iter(self._records)

    def consume(self) -> Any:
        return self._summary

    def single(self, strict: bool = False) -> neo4j.Record | None:
        return self._records[0] if self._records else None

    def data(self) -> list[dict[str, Any]]:
        return [r.data() for r in self._records]


def measure(
    engine: str,
    count: int,
    batch: int,
    warm: int,
    embedding: str,
    drop_indexes: Sequence[str] = (),
) -> dict[str, Any]:
    turns = make_turns(count)
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp), engine)
        with services as endpoints:
            graph_pid = services.graph.pid
            assert graph_pid is not None
            settings = Settings(
                _env_file=None,
                data_dir=Path(tmp) / "client",
                log_level="WARNING",
                log_format=LogFormat.JSON,
                **settings_fields(embedding),
            )
            configure_logging(settings)
            clients = build_clients(with_endpoints(settings, endpoints))
            clock = StatementClock(graph_pid)
            jit = ThreadsClock(graph_pid, JIT_THREADS)
            per_batch: list[float] = []
            jit_per_batch: list[float] = []
            try:
                pipeline = build_pipeline(clients)
                for name in drop_indexes:  # what an index costs: measured without it
                    clients.graph.execute_query(f"DROP INDEX {name} IF EXISTS")
                with clock.installed():
                    for number, start in enumerate(range(0, len(turns), batch)):
                        clock.recording = number >= warm
                        chunk = turns[start : start + batch]
                        jit.start()
                        cpu = cpu_seconds(graph_pid)
                        pipeline.ingest(chunk)
                        per_batch.append((cpu_seconds(graph_pid) - cpu) * 1000 / len(chunk))
                        jit.sample()
                        jit_per_batch.append(jit.seconds * 1000 / len(chunk))
            finally:
                clients.close()
    warm_turns = max(1, len(turns) - warm * batch)
    return {
        "per_batch": per_batch,
        "jit_per_batch": jit_per_batch,
        "clock": clock,
        "warm_turns": warm_turns,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--warm", type=int, default=10, help="batches left out of the table")
    parser.add_argument("--embedding", default="local", choices=("local", "static", "none"))
    parser.add_argument("--graph", default="arcadedb,neo4j")
    parser.add_argument(
        "--drop-index",
        action="append",
        default=[],
        metavar="NAME",
        help="an index dropped after the pipeline's start-up, to measure what it costs "
        "(e.g. episode_text on Neo4j); repeatable",
    )
    args = parser.parse_args(argv)
    result: dict[str, float | int | str] = {"turns": args.turns, "embedding": args.embedding}
    for engine in [e.strip() for e in args.graph.split(",") if e.strip()]:
        got = measure(engine, args.turns, args.batch, args.warm, args.embedding, args.drop_index)
        per_batch, clock, n = got["per_batch"], got["clock"], got["warm_turns"]
        jit_per_batch = got["jit_per_batch"]
        print(f"# {engine}: graph CPU ms per turn, batch by batch")
        print(" ".join(f"{v:.1f}" for v in per_batch))
        print(f"# {engine}: of which its JIT compiler threads, batch by batch")
        print(" ".join(f"{v:.1f}" for v in jit_per_batch))
        rows = [
            [clock.cpu[k] * 1000 / n, clock.wall[k] * 1000 / n, clock.calls[k], k]
            for k in sorted(clock.cpu, key=lambda k: -clock.cpu[k])
        ]
        total = sum(clock.cpu.values()) * 1000 / n
        print(f"# {engine}: after {args.warm} batches, {n} turns: {total:.3f} ms/turn graph CPU")
        print(table(["cpu_ms_per_turn", "wall_ms_per_turn", "calls", "statement"], rows))
        warm_batches = per_batch[args.warm :] or per_batch
        result[f"{engine}_graph_cpu_ms_per_turn_warm"] = round(
            sum(warm_batches) / len(warm_batches), 3
        )
        warm_jit = jit_per_batch[args.warm :] or jit_per_batch
        result[f"{engine}_graph_jit_cpu_ms_per_turn_warm"] = round(sum(warm_jit) / len(warm_jit), 3)
        result[f"{engine}_graph_cpu_ms_per_turn_all"] = round(sum(per_batch) / len(per_batch), 3)
    print(result_line("ingest_statements", **result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
