"""Round trips of the recall request/reply exchange, each way, against a real Redis.

    python -m bench.request_rtt [--requests 2000] [--rounds 3]

Server: ``--requests`` recall requests wait on the list; one ``RequestServer`` answers
them all (parse, check, empty answer), in two ways taking turns ``--rounds`` times:
its serving loop (``run``: each reply goes with the next blocking pop in the same
pipeline) and the same calls without it (reply, then a blocking pop: two round trips per
request, as before issue 24's change). Reports the server's wall time per request and the Redis
commands it sent.

Client of a sharded deployment: the push of one request through ``turngraph_shard_push``
(claim check and push in one call) against the reference of the two as separate calls
(``ZCOUNT``, then the ``RPUSH``+``EXPIRE`` pipeline), taking turns; and the whole
``RecallClient.recall`` for a shard nobody claims (it must answer ``shard_unavailable``).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import redis

from bench.report import percentile, result_line, table
from turngraph.embedded.redis_server import RedisServer
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.request_reply import push_message
from turngraph.producers.request_server import RequestServer
from turngraph.producers.shard_push import load_shard_push, push_if_served
from turngraph.schemas.keys import RECALL_REPLY_PREFIX, RECALL_REQUESTS
from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.schemas.shards import (
    NO_REPLICA,
    request_shard,
    shard_alive_key,
    shard_requests_key,
)

PUSHES = 2_000
"""Client pushes timed per way and round."""


def _request(i: int) -> RecallRequest:
    return RecallRequest(
        request_id=f"r{i}",
        reply_to=f"{RECALL_REPLY_PREFIX}r{i}",
        query="which cache does the billing service use",
        workspace="w1",
        sent_at_ms=int(time.time() * 1000),
        deadline_ms=60_000,
    )


def _round_trips(conn: redis.Redis) -> int:
    """The server's round trips: its blocking pops and its reply pipelines (one RPUSH
    each)."""
    stats: Any = conn.info("commandstats")
    return sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("blpop", "rpush"))


def serve(conn: redis.Redis, requests: int, loop: bool) -> tuple[float, float]:
    """(server wall ms per request, round trips per request) answering ``requests``."""
    conn.flushdb()
    conn.rpush(RECALL_REQUESTS, *(_request(i).model_dump_json() for i in range(requests)))
    server = RequestServer(conn, RecallRequest, RecallResponse, reply_ttl_s=30)
    stop = threading.Event()

    def serve_once() -> None:
        popped = server.pop([RECALL_REQUESTS], timeout_s=1.0)
        if popped is None:
            return
        request, _ = server.accept(popped[1], lambda key: True)
        assert request is not None
        server.reply(request.reply_to, RecallResponse(request_id=request.request_id, success=True))
        server.counters.answered += 1
        if server.counters.answered == requests:
            stop.set()

    conn.config_resetstat()
    started = time.perf_counter()
    if loop:
        server.run(serve_once, stop)
    else:
        while not stop.is_set():
            serve_once()
    took = time.perf_counter() - started
    trips = _round_trips(conn)
    if conn.llen(f"{RECALL_REPLY_PREFIX}r{requests - 1}") != 1:
        raise SystemExit("a request was not answered")
    return took * 1000 / requests, trips / requests


def time_pushes(push: Callable[[str], object]) -> list[float]:
    payload = _request(0).model_dump_json()
    timings = []
    for _ in range(PUSHES):
        started = time.perf_counter()
        push(payload)
        timings.append((time.perf_counter() - started) * 1000)
    return timings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.request_rtt")
    parser.add_argument("--requests", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        server = RedisServer(Path(tmp))
        server.start()
        try:
            conn = redis.Redis.from_url(server.url)
            served: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
            for _ in range(args.rounds):
                for loop in (True, False):
                    served[loop].append(serve(conn, args.requests, loop))

            conn.flushdb()
            load_shard_push(conn)
            key = shard_requests_key(RECALL_REQUESTS, 0, 4)
            conn.zadd(shard_alive_key(0), {"replica": 2**50})
            request = _request(0)

            def two_calls(payload: str) -> None:
                if conn.zcount(shard_alive_key(0), int(time.time() * 1000), "+inf"):
                    push_message(conn, key, request, 60)

            pushes: dict[str, list[float]] = {"function": [], "two calls": []}
            for _ in range(args.rounds):
                pushes["function"] += time_pushes(
                    lambda payload: push_if_served(conn, 0, key, payload, 60)
                )
                pushes["two calls"] += time_pushes(two_calls)
                conn.delete(key)
            client = RecallClient(conn, deadline_ms=2_000, shards=4)
            orphan = next(f"w{i}" for i in range(100) if request_shard(f"w{i}", None, 4))
            degraded = []
            for _ in range(200):
                started = time.perf_counter()
                answer = client.recall("anything", workspace=orphan, scopes=("workspace",))
                degraded.append((time.perf_counter() - started) * 1000)
                if answer.degraded != [NO_REPLICA]:
                    raise SystemExit(f"expected {NO_REPLICA}, got {answer.degraded}")
        finally:
            server.stop()
    report(args, served, pushes, degraded)
    return 0


def report(
    args: argparse.Namespace,
    served: dict[bool, list[tuple[float, float]]],
    pushes: dict[str, list[float]],
    degraded: list[float],
) -> None:
    print(f"{args.requests} queued recall requests, {args.rounds} rounds taking turns")
    rows = [
        [
            "serving loop (reply takes the next)" if loop else "reply, then blocking pop",
            min(ms for ms, _ in runs),
            percentile([ms for ms, _ in runs], 50),
            runs[0][1],
        ]
        for loop, runs in served.items()
    ]
    print(table(["server", "best_ms_per_request", "median_ms_per_request", "round_trips"], rows))
    print(
        table(
            ["sharded client push", "n", "p50_ms", "p99_ms"],
            [[way, len(t), percentile(t, 50), percentile(t, 99)] for way, t in pushes.items()],
        )
    )
    print(
        f"no replica: {len(degraded)} recalls, p50 {percentile(degraded, 50):.2f} ms, "
        f"max {max(degraded):.2f} ms, all {NO_REPLICA}"
    )
    loop_ms = percentile([ms for ms, _ in served[True]], 50)
    pop_ms = percentile([ms for ms, _ in served[False]], 50)
    fn, two = percentile(pushes["function"], 50), percentile(pushes["two calls"], 50)
    print(
        result_line(
            "request_rtt",
            requests=args.requests,
            server_ms=round(loop_ms, 3),
            server_two_trips_ms=round(pop_ms, 3),
            server_ratio=round(loop_ms / pop_ms, 3),
            push_p50_ms=round(fn, 3),
            push_two_calls_p50_ms=round(two, 3),
            push_ratio=round(fn / two, 3),
            no_replica_p50_ms=round(percentile(degraded, 50), 3),
            no_replica_max_ms=round(max(degraded), 3),
        )
    )


if __name__ == "__main__":
    sys.exit(main())
