"""Client load for ``bench.recall_shards``: a closed loop (saturation) and an open loop
(a fixed offered rate, the same for every deployment compared).

Requests go through ``RecallClient`` (routing by shard) for a random workspace of the
synthetic corpus, scope ``workspace``. The open loop schedules request *i* at
``start + i / rate`` (``start``: once every sender is connected) whatever the answers
do; its latency counts from when the request was due, so a request that waited for a
free sender counts its wait (no coordinated omission).
"""

from __future__ import annotations

import itertools
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from bench.proc import thread_waited_seconds
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.keys import RECALL_REQUESTS
from turngraph.schemas.shards import shard_of

DEADLINE_MS = 5_000
OPEN_LOOP_SENDERS = 32
"""Threads that send the open loop's requests (each waits for its answer)."""

SCHEDULE_LEAD_S = 0.05
"""From every sender connected to the first request due."""

CONNECT_TIMEOUT_S = 60.0
"""How long the senders wait for each other to connect (else the slice fails loudly)."""


class CollectorPauses:
    """Time this process spent in full (generation 2) collections, which hold the GIL:
    every sender waits meanwhile (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.count = 0
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._started
            self.count += 1


@dataclass
class Load:
    latencies: list[float] = field(default_factory=list)
    shards: list[int] = field(default_factory=list)
    """The shard of each request of the open loop (as ``latencies``)."""
    failures: int = 0
    """Answers that were not a success, or were flagged ``degraded``."""
    seconds: float = 0.0
    senders_waited_s: float = 0.0
    """Time the open loop's sender threads were runnable but waiting for a core."""

    @property
    def per_s(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def slowest_by_shard(self, count: int, share: float = 0.01) -> list[int]:
        """How many of the slowest ``share`` of the open loop's requests went to each of
        ``count`` shards (even, when the shards' lists are served alike)."""
        ranked = sorted(zip(self.latencies, self.shards, strict=True), reverse=True)
        slowest = ranked[: max(1, int(len(ranked) * share))]
        return [sum(1 for _, shard in slowest if shard == s) for s in range(count)]


def _ask(
    client: RecallClient, rng: random.Random, workspaces: int, queries: list[str], shards: int
) -> tuple[bool, int]:
    """One request for a random workspace: (answered, not degraded; its shard of
    ``shards``)."""
    w = rng.randrange(workspaces)
    response = client.recall(
        rng.choice(queries), workspace=f"ws{w}", user=f"u{w}", scopes=("workspace",)
    )
    return response.success and not response.degraded, shard_of(f"ws{w}", shards)


def closed_loop(
    url: str,
    shards: int,
    workspaces: int,
    queries: list[str],
    clients: int,
    seconds: float,
    requests_key: str = RECALL_REQUESTS,
) -> Load:
    """``clients`` threads, each asking again as soon as answered, for ``seconds``."""
    load = Load(seconds=seconds)
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def run(seed: int) -> None:
        rng = random.Random(seed)
        client = RecallClient(
            redis.Redis.from_url(url),
            requests_key=requests_key,
            deadline_ms=DEADLINE_MS,
            shards=shards,
        )
        mine, bad = [], 0
        while time.monotonic() < stop_at:
            started = time.perf_counter()
            ok, _ = _ask(client, rng, workspaces, queries, shards)
            mine.append((time.perf_counter() - started) * 1000)
            bad += not ok
        with lock:
            load.latencies.extend(mine)
            load.failures += bad

    _run_threads(run, clients)
    return load


def open_loop(
    url: str,
    shards: int,
    workspaces: int,
    queries: list[str],
    rate: float,
    seconds: float,
    requests_key: str = RECALL_REQUESTS,
    label_shards: int = 0,
) -> Load:
    """``rate * seconds`` requests, request *i* due at ``start + i / rate``; each labelled
    with its shard of ``label_shards`` (default: of ``shards``) in ``Load.shards``."""
    total = max(1, round(rate * seconds))
    load = Load(seconds=seconds)
    lock = threading.Lock()
    numbers = itertools.count()
    starts: list[float] = []
    # The schedule starts once every sender is connected: redis-py connects on a
    # connection's first command, so otherwise the slice's first requests would each
    # count a connection's set-up (32 at once; they were the slowest of some slices).
    ready = threading.Barrier(
        OPEN_LOOP_SENDERS,
        action=lambda: starts.append(time.monotonic() + SCHEDULE_LEAD_S),
        timeout=CONNECT_TIMEOUT_S,
    )

    def run(seed: int) -> None:
        rng = random.Random(seed)
        conn = redis.Redis.from_url(url)
        conn.ping()
        client = RecallClient(
            conn, requests_key=requests_key, deadline_ms=DEADLINE_MS, shards=shards
        )
        ready.wait()
        start = starts[0]
        mine: list[float] = []
        shards_of: list[int] = []
        bad = 0
        waited = thread_waited_seconds()
        while True:
            with lock:
                number = next(numbers)
            if number >= total:
                break
            due = start + number / rate
            time.sleep(max(0.0, due - time.monotonic()))  # pacing to the schedule
            ok, shard = _ask(client, rng, workspaces, queries, label_shards or shards)
            mine.append((time.monotonic() - due) * 1000)
            shards_of.append(shard)
            bad += not ok
        with lock:
            load.latencies.extend(mine)
            load.shards.extend(shards_of)
            load.failures += bad
            load.senders_waited_s += thread_waited_seconds() - waited

    _run_threads(run, OPEN_LOOP_SENDERS)
    return load


def _run_threads(target: Callable[[int], None], count: int) -> None:
    threads = [threading.Thread(target=target, args=(i + 1,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
