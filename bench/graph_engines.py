"""The graph store on both engines in one run: writes, then a recall bootstrap at N memories.

For each engine (the embedded ArcadeDB, then Neo4j 5.26 fetched through Maven), starts the
project's own services, writes ``--turns`` turns through the Bolt graph store in
batches of ``--batch`` (offline extractor, as the ingest worker does, without the queue),
then times a recall replica's bootstrap: reading every recallable memory back from the
graph into its index (lexical only, ``--embedding none``, so the time is the graph's and
the index's, not a model's). Graph-server CPU is read from ``/proc``. Prints a table and
``RESULT graph_engines …``.

    python -m bench.graph_engines [--turns 50000] [--batch 500] [--graph arcadedb,neo4j]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.ingest import make_turns
from bench.proc import cpu_seconds
from bench.report import result_line, table
from turngraph.app import build_graph_store, build_recall_worker
from turngraph.clients import build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.producers.redaction import redact_event
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.settings import LogFormat, Settings
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.graph.schema import ensure_schema


def measure(engine: str, count: int, batch: int) -> dict[str, float]:
    turns = [redact_event(t) for t in make_turns(count, sessions=max(50, count // 40))]
    extractor = OfflineExtractor(ONTOLOGY)
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp), engine)
        with services as endpoints:
            graph_pid = services.graph.pid
            assert graph_pid is not None
            base = Settings(
                _env_file=None,
                data_dir=Path(tmp) / "client",
                embedding_provider="none",
                log_level="WARNING",
                log_format=LogFormat.JSON,
            )
            clients = build_clients(with_endpoints(base, endpoints))
            try:
                ensure_schema(clients.graph, clients.graph_database, ONTOLOGY.labels())
                store = build_graph_store(clients)
                graph_cpu = cpu_seconds(graph_pid)
                started = time.perf_counter()
                for i in range(0, len(turns), batch):
                    chunk = turns[i : i + batch]
                    store.write(list(zip(chunk, extractor.extract(chunk), strict=True)))
                write_s = time.perf_counter() - started
                write_graph_cpu = cpu_seconds(graph_pid) - graph_cpu
                replica = build_recall_worker(clients)
                graph_cpu = cpu_seconds(graph_pid)
                started = time.perf_counter()
                loaded = replica.bootstrap()
                bootstrap_s = time.perf_counter() - started
                bootstrap_graph_cpu = cpu_seconds(graph_pid) - graph_cpu
            finally:
                clients.close()
    return {
        "write_s": write_s,
        "write_graph_cpu": write_graph_cpu,
        "loaded": loaded,
        "bootstrap_s": bootstrap_s,
        "bootstrap_graph_cpu": bootstrap_graph_cpu,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--turns", type=int, default=50_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--graph", default="arcadedb,neo4j")
    args = parser.parse_args(argv)
    engines = [e.strip() for e in args.graph.split(",") if e.strip()]
    figures = {engine: measure(engine, args.turns, args.batch) for engine in engines}
    n = args.turns
    print(f"cores: {os.cpu_count()}; load average {os.getloadavg()[0]:.1f}")
    rows = [
        [e, n, f["write_s"], n / f["write_s"], f["write_graph_cpu"] * 1000 / n, int(f["loaded"]),
         f["bootstrap_s"], f["bootstrap_graph_cpu"]]
        for e, f in figures.items()
    ]  # fmt: skip
    print(
        table(
            ["graph", "turns", "write_s", "turns_per_s", "graph_cpu_ms_per_turn", "memories",
             "bootstrap_s", "bootstrap_graph_cpu_s"],
            rows,
        )
    )  # fmt: skip
    result: dict[str, float | int | str] = {"turns": n, "batch": args.batch}
    for e, f in figures.items():
        result[f"{e}_write_turns_per_s"] = round(n / f["write_s"], 1)
        result[f"{e}_graph_cpu_ms_per_turn"] = round(f["write_graph_cpu"] * 1000 / n, 3)
        result[f"{e}_bootstrap_s"] = round(f["bootstrap_s"], 2)
        result[f"{e}_loaded"] = int(f["loaded"])
    print(result_line("graph_engines", **result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
