"""Overload: several producer processes publish 20x more events than the queue may hold.

    python -m bench.overload [--bound 500] [--producers 4] [--factor 20]

Checks, per policy, that the inbox length (sampled throughout) never exceeds the bound
and that ``accepted + dropped + duplicates == published`` exactly. Each producer also
re-publishes some of its own events and a set of events shared by all producers; no
worker runs here, and duplicates are found when admission moves entries into RQ jobs, so
they count as accepted in this bench. Starts its own embedded Redis.
"""

from __future__ import annotations

import argparse
import multiprocessing
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from bench.report import result_line, table
from turngraph.embedded import RedisServer
from turngraph.producers.bounded_queue import QueueStats, read_stats
from turngraph.producers.publisher import Publisher
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.keys import INBOX_TEMPLATE
from turngraph.schemas.turn_event import ClientInfo, TurnEvent

SHARED_EVENTS = 20
"""Events every producer publishes with the same ids (cross-process duplicates)."""

REPUBLISH_FRACTION = 0.1
"""Share of its own events a producer publishes a second time."""

CONTENT = (
    "We agreed to bound the ingest queue and drop the newest events under overload; "
    "see producers/bounded_queue.py. decision: keep the Lua script atomic."
)


def overload_event(session: str, index: int) -> TurnEvent:
    """The ``index``-th event of a producer's ``session``."""
    return TurnEvent.model_validate(
        {
            "session_id": session,
            "workspace": "w_overload",
            "user": "u_overload",
            "turn_index": index,
            "role": "user",
            "content": f"{CONTENT} ({session} #{index})",
            "occurred_at": "2026-11-21T05:00:00+00:00",
            "client": ClientInfo(name="bench.overload"),
        }
    )


def produce(args: tuple[str, str, str, int, str, int, Any]) -> dict[str, int]:
    """One producer process: publish its events as fast as it can, then flush."""
    redis_url, queue_name, policy, bound, session, count, start = args
    events = [overload_event(session, i) for i in range(count)]
    shared = [overload_event("s_shared", i) for i in range(SHARED_EVENTS)]
    again = events[: int(count * REPUBLISH_FRACTION)]
    publisher = Publisher(
        redis_url=redis_url,
        queue_name=queue_name,
        max_queue_length=bound,
        drop_policy=policy,
        buffer_size=2 * (count + SHARED_EVENTS),
    )
    start.wait()
    began = time.perf_counter()
    for event in [*events, *shared, *again]:
        publisher.publish(event)
    publisher.flush(timeout_s=60)
    elapsed_us = int((time.perf_counter() - began) * 1e6)
    return {**publisher.close().as_dict(), "elapsed_us": elapsed_us}


@dataclass
class OverloadRun:
    policy: DropPolicy
    bound: int
    calls: int = 0
    producer_stats: list[dict[str, int]] = field(default_factory=list)
    shared: QueueStats = field(default_factory=QueueStats)
    max_length: int = 0
    samples: int = 0

    @property
    def exact(self) -> bool:
        """Every publish call accounted for, exactly once."""
        s = self.shared
        local = sum(p["dropped_local"] + p["abandoned"] for p in self.producer_stats)
        return (
            s.accepted + s.dropped + s.duplicates == s.published
            and s.published + local == self.calls
        )


def run_overload(
    redis_url: str,
    *,
    policy: DropPolicy,
    bound: int,
    producers: int,
    factor: int,
    queue_name: str = "turngraph-overload",
) -> OverloadRun:
    """Run the producers at once, sampling the queue length until they are all done."""
    per_producer = bound * factor // producers
    conn = redis.Redis.from_url(redis_url)
    run = OverloadRun(policy=policy, bound=bound)
    done = threading.Event()
    queue_key = INBOX_TEMPLATE.format(queue=queue_name)

    def sample() -> None:
        while not done.is_set():
            run.max_length = max(run.max_length, int(conn.llen(queue_key)))
            run.samples += 1
            time.sleep(0.0005)  # sampling interval, not synchronisation

    ctx = multiprocessing.get_context("spawn")
    with ctx.Manager() as manager:
        start = manager.Event()
        jobs = [
            (redis_url, queue_name, policy.value, bound, f"s_producer{k}", per_producer, start)
            for k in range(producers)
        ]
        with ctx.Pool(producers) as pool:
            pending = pool.map_async(produce, jobs)
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            start.set()
            run.producer_stats = pending.get(timeout=300)
            done.set()
            sampler.join()
    run.max_length = max(run.max_length, int(conn.llen(queue_key)))
    run.calls = sum(p["published"] for p in run.producer_stats)
    run.shared = read_stats(conn, queue_name)
    conn.close()
    return run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="bounded queue under 20x overload")
    parser.add_argument("--bound", type=int, default=500)
    parser.add_argument("--producers", type=int, default=4)
    parser.add_argument("--factor", type=int, default=20)
    args = parser.parse_args(argv)
    runs: list[OverloadRun] = []
    with tempfile.TemporaryDirectory(prefix="bench-overload-") as tmp:
        server = RedisServer(Path(tmp) / "redis")
        server.start()
        try:
            for policy in DropPolicy:
                redis.Redis.from_url(server.url).flushdb()
                runs.append(
                    run_overload(
                        server.url,
                        policy=policy,
                        bound=args.bound,
                        producers=args.producers,
                        factor=args.factor,
                    )
                )
        finally:
            server.stop()
    rows = [
        [
            r.policy.value,
            r.calls,
            r.shared.published,
            r.shared.accepted,
            r.shared.dropped_newest,
            r.shared.dropped_oldest,
            r.shared.duplicates,
            r.max_length,
            r.bound,
            r.samples,
            round(r.calls / max(p["elapsed_us"] for p in r.producer_stats) * 1e6),
            "yes" if r.exact and r.max_length <= r.bound else "NO",
        ]
        for r in runs
    ]
    headers = [
        "policy", "calls", "published", "accepted", "drop_newest", "drop_oldest",
        "duplicates", "max_len", "bound", "samples", "events/s", "ok",
    ]  # fmt: skip
    print(f"{args.producers} producer processes, {args.factor}x the bound of {args.bound}\n")
    print(table(headers, rows))
    newest, oldest = runs
    print(
        result_line(
            "overload",
            bound=args.bound,
            producers=args.producers,
            published=newest.shared.published,
            newest_accepted=newest.shared.accepted,
            newest_dropped=newest.shared.dropped,
            newest_duplicates=newest.shared.duplicates,
            newest_max_len=newest.max_length,
            oldest_accepted=oldest.shared.accepted,
            oldest_dropped=oldest.shared.dropped,
            oldest_duplicates=oldest.shared.duplicates,
            oldest_max_len=oldest.max_length,
            exact=int(all(r.exact for r in runs)),
            bound_held=int(all(r.max_length <= r.bound for r in runs)),
        )
    )
    return 0 if all(r.exact and r.max_length <= r.bound for r in runs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
