"""The graph's CPU per turn as its history grows: rounds of turns into one graph, never
emptied.

``bench.ingest`` empties the graph before each run, so it measures a graph of one run's
turns. A user's graph only grows: the same workspaces and entities gather mentions round
after round (each round's turns are ``bench.ingest``'s, in new sessions of the same five
workspaces), and a per-turn cost that grows with them shows here and nowhere else. One
``turngraph worker ingest --burst`` per round, no embedding model by default (its cost
does not depend on the graph; ``--embedding local`` stores the vectors too, as Neo4j's
vector index and ``bench.ingest`` do); per round: turns/s, the worker's and the graph
server's CPU per turn, the server's JIT compiler threads apart, and the rest (the server's
CPU beyond its JIT). The reference is the same run's third round (the JIT mostly done):
``rest_vs_round_3`` is the last round's rest over it. Ends with the most mentioned
entity's mentions (its provenance: one ``MENTIONS`` each) and ``RESULT ingest_growth …``.

    python -m bench.ingest_growth [--graph arcadedb|neo4j] [--rounds 12] [--turns 3000]
                                  [--embedding none|static|local]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

import neo4j
import redis

from bench import ingest
from bench.embedding_options import EMBEDDINGS
from bench.report import result_line, table
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.schemas.turn_event import TurnEvent

REFERENCE_ROUND = 3
"""The round whose rest the last is compared with (the JIT mostly done by then)."""

MOST_MENTIONED = """
MATCH (n) WHERE n.mentions IS NOT NULL
RETURN max(n.mentions) AS most, count(n) AS entities
"""


def round_turns(base: list[TurnEvent], k: int) -> list[TurnEvent]:
    """``base`` in new sessions of round ``k`` (new event ids, the same workspaces)."""
    return [
        TurnEvent(**{**t.model_dump(exclude={"event_id"}), "session_id": f"r{k}-{t.session_id}"})
        for t in base
    ]


def graph_counts(endpoints: ServiceEndpoints) -> tuple[int, int, int]:
    """(turns in the graph, entities, the most mentions of one)."""
    with neo4j.GraphDatabase.driver(
        endpoints.graph_uri, auth=(endpoints.graph_user, endpoints.graph_password)
    ) as driver:
        records, _, _ = driver.execute_query(MOST_MENTIONED, database_=endpoints.graph_database)
        turns, _, _ = driver.execute_query(
            "MATCH (e:Episode) RETURN count(e) AS n", database_=endpoints.graph_database
        )
    return int(turns[0]["n"]), int(records[0]["entities"]), int(records[0]["most"] or 0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--graph", choices=("arcadedb", "neo4j"), default="arcadedb")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--turns", type=int, default=3000)
    parser.add_argument("--embedding", choices=tuple(EMBEDDINGS), default="none")
    args = parser.parse_args(argv)
    if args.rounds < REFERENCE_ROUND:
        parser.error(f"--rounds must be at least {REFERENCE_ROUND}")
    base = ingest.make_turns(args.turns)
    n = len(base)
    ms = 1000 / n
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp), args.graph)
        with services as endpoints:
            graph_pid = services.graph.pid
            assert graph_pid is not None
            ingest.reset(endpoints, redis.Redis.from_url(endpoints.redis_url))
            for k in range(1, args.rounds + 1):
                turns = round_turns(base, k)  # Redis emptied each round, the graph kept
                seconds, cpu, graph, jit, _retried = ingest.run_workers(
                    endpoints, 1, turns, graph_pid, args.embedding, keep_graph=True
                )
                rows.append(
                    [k, k * n, n / seconds, cpu * ms, graph * ms, jit * ms, (graph - jit) * ms]
                )
            stored, entities, most = graph_counts(endpoints)
    headers = ["round", "turns_in_graph", "turns_per_s", "worker_cpu_ms_per_turn"]
    headers += ["graph_cpu_ms_per_turn", "of_which_jit", "rest_ms_per_turn"]
    print(f"graph: {args.graph}; embedding: {args.embedding}; {n} turns a round, one worker")
    print(table(headers, rows))
    print(f"turns in the graph: {stored}; entities: {entities}, the most mentioned {most} times")
    reference, last = rows[REFERENCE_ROUND - 1], rows[-1]
    print(
        result_line(
            "ingest_growth",
            graph=args.graph,
            embedding=args.embedding,
            rounds=args.rounds,
            turns_per_round=n,
            turns_in_graph=stored,
            first_turns_per_s=round(rows[0][2], 1),
            last_turns_per_s=round(last[2], 1),
            reference_rest_ms_per_turn=round(reference[6], 3),
            last_rest_ms_per_turn=round(last[6], 3),
            last_graph_cpu_ms_per_turn=round(last[4], 3),
            rest_vs_round_3=round(last[6] / reference[6], 2) if reference[6] > 0 else 0,
            most_mentions=most,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
