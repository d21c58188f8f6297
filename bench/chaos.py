"""Chaos: kill an ingest worker mid-batch, restart Redis and the graph server under load.

Publishes turns continuously through the real Publisher while two ingest workers run;
SIGKILLs both workers while a batch is claimed and starts two new ones, restarts Redis
(SIGTERM: AOF flushed) and then the graph server; stops publishing; waits until the
queue, the claims and the retries drain. Then checks: every accepted event (the queue's
own counters) is in the graph exactly once, and no episode exists that was not accepted.

    python -m bench.chaos [--seconds 20] [--rate 200]
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import neo4j
import redis
import structlog

from bench.report import result_line, table
from producers.bounded_queue import read_stats
from producers.publisher import Publisher
from schemas.defaults import INGEST_QUEUE
from schemas.keys import CLAIMS_TEMPLATE
from schemas.turn_event import ClientInfo, TurnEvent
from turngraph.embedded import EmbeddedServices, ServiceEndpoints

DRAIN_TIMEOUT_S = 420.0
"""Abandoned jobs are found by RQ's registry cleaning (heartbeat TTL + maintenance)."""

JOB_TIMEOUT_S = 20
"""Short job timeout for the run, so abandoned jobs are detected sooner."""


def _publish(redis_url: str, stop: threading.Event, rate: float, published: list[str]) -> None:
    interval = 1 / rate
    with Publisher(redis_url=redis_url, job_timeout_s=JOB_TIMEOUT_S) as publisher:
        index = 0
        next_at = time.monotonic()
        while not stop.is_set():
            event = TurnEvent(
                session_id=f"chaos-s{index % 20}",
                workspace="chaos-w",
                user="chaos-u",
                turn_index=index // 20,
                role="user",
                content=f"Turn {index}: edit src/chaos/m{index % 17}.py on branch fix/c{index % 5}",
                occurred_at=datetime.now(UTC),
                client=ClientInfo(name="chaos"),
            )
            publisher.publish(event)
            published.append(event.event_id)
            index += 1
            next_at += interval
            time.sleep(max(0.0, next_at - time.monotonic()))
        publisher.flush(timeout_s=60)


def _worker(env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "worker", "ingest"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def kill_mid_batch(redis_url: str, workers: list[subprocess.Popen[bytes]]) -> int:
    """SIGKILL the workers while a batch is claimed (or after 10 s); returns the claim size."""
    conn = redis.Redis.from_url(redis_url)
    key = CLAIMS_TEMPLATE.format(queue=INGEST_QUEUE)
    deadline = time.monotonic() + 10
    claimed = 0
    while time.monotonic() < deadline and not claimed:
        claimed = int(conn.zcard(key))
    for worker in workers:
        worker.kill()
        worker.wait()
    conn.close()
    return claimed


def _episode_ids(endpoints: ServiceEndpoints) -> list[str]:
    with neo4j.GraphDatabase.driver(
        endpoints.graph_uri, auth=(endpoints.graph_user, endpoints.graph_password)
    ) as driver:
        records, _, _ = driver.execute_query(
            "MATCH (e:Episode) RETURN e.event_id AS id", database_=endpoints.graph_database
        )
    return [r["id"] for r in records]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=200.0, help="events per second")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    events: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp))
        endpoints = services.start()
        started = time.monotonic()
        try:
            env = {**os.environ, **endpoints.as_env(), "TURNGRAPH_LOG_LEVEL": "ERROR"}
            workers = [_worker(env), _worker(env)]
            stop = threading.Event()
            published: list[str] = []
            producer = threading.Thread(
                target=_publish, args=(endpoints.redis_url, stop, args.rate, published)
            )
            producer.start()
            step = args.seconds / 4
            time.sleep(step)  # let load build up before each fault
            claimed = kill_mid_batch(endpoints.redis_url, workers)
            events.append(
                (time.monotonic() - started, f"both workers SIGKILLed ({claimed} jobs claimed)")
            )
            workers += [_worker(env), _worker(env)]
            time.sleep(step)
            services.redis.stop()
            services.redis.start()
            events.append((time.monotonic() - started, "Redis restarted"))
            time.sleep(step)
            services.graph.stop()
            services.graph.start()
            events.append((time.monotonic() - started, "graph server restarted"))
            time.sleep(step)
            stop.set()
            producer.join()
            events.append((time.monotonic() - started, f"publishing stopped ({len(published)})"))
            conn = redis.Redis.from_url(endpoints.redis_url)
            stats = read_stats(conn, INGEST_QUEUE)
            deadline = time.monotonic() + DRAIN_TIMEOUT_S
            ids: list[str] = []
            while time.monotonic() < deadline:
                ids = _episode_ids(endpoints)
                if len(set(ids)) >= stats.enqueued:
                    break
                time.sleep(2)  # waiting for retries scheduled by RQ
            events.append(
                (
                    time.monotonic() - started,
                    "drained" if len(set(ids)) >= stats.enqueued else "gave up",
                )
            )
            for worker in workers:
                worker.terminate()
            for worker in workers:
                try:
                    worker.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    events.append((time.monotonic() - started, "a worker ignored SIGTERM"))
                    worker.kill()
        finally:
            services.stop()
    accepted = stats.enqueued
    in_graph = len(set(ids))
    duplicates = len(ids) - in_graph
    unknown = len(set(ids) - set(published))
    lost = accepted - in_graph
    print(table(["t_s", "event"], [[round(t, 1), what] for t, what in events]))
    print(
        table(
            ["published", "accepted", "dropped", "duplicates", "in_graph", "lost", "dup_in_graph"],
            [
                [
                    len(published),
                    accepted,
                    stats.dropped,
                    stats.duplicates,
                    in_graph,
                    lost,
                    duplicates,
                ]
            ],
        )
    )
    print(
        result_line(
            "chaos",
            published=len(published),
            accepted=accepted,
            in_graph=in_graph,
            lost=lost,
            duplicated=duplicates,
            unknown=unknown,
            recovery_s=round(events[-1][0] - events[-2][0], 1),
        )
    )
    return 0 if lost == 0 and duplicates == 0 and unknown == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
