"""Chaos: a steady publish stream while ingest workers, Redis and the graph server are SIGKILLed.

The real Publisher publishes at a steady rate for ``--seconds`` while ``--workers`` ingest
worker processes run. At random moments (seeded) one worker is SIGKILLed ``--kills`` times
and a replacement started each time; Redis and the graph server are each SIGKILLed once (no
clean shutdown: Redis loses what its append-only file had not written) and restarted on
the same data and port. After the last fault, the bench waits until nothing is left
anywhere a turn can wait (inbox, admission list, RQ's queue and its started /
intermediate / scheduled / failed registries, dead letters) and every accepted event has
its marker, then checks per event (``bench/chaos_check.py``): exactly one Episode and
one ``IN_SESSION`` per accepted event, the marker's count of writes that created it
equal to 1, every entity's mention count equal to the distinct episodes mentioning it;
nothing in the graph that was not published. ``drain_s`` is measured from the last fault.

Beside it the bench reports the offered rate (published per second of publishing) and the
sustained ingest rate: events ingested per second over the sampled intervals in which the
workers had a backlog the whole time (``--backlog`` jobs or more waiting), i.e. what the
workers managed under the faults when they had work. A drain longer than 60 s fails the run
only when the offered rate was below the sustained one: otherwise it is capacity, and
docs/operations.md says how many workers a rate needs.

    python -m bench.chaos [--seconds 60] [--rate 100] [--kills 20] [--appendfsync everysec]
                          [--graph arcadedb,neo4j]

Both graph engines by default, one chaos run after the other (the RESULT keys are
prefixed with the engine).
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import neo4j
import redis
import structlog

from bench.chaos_check import backlog, graph_counts, job_hashes_left, markers, verdict
from bench.report import result_line, table
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.embedded.redis_server import RedisServer
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.publisher import Publisher
from turngraph.producers.publisher_stats import PublisherStats
from turngraph.schemas.defaults import INGEST_QUEUE
from turngraph.schemas.turn_event import ClientInfo, TurnEvent

DRAIN_LIMIT_S = 60.0
"""SPEC: drained within 60 s of the last fault."""

DRAIN_STALL_S = 120.0
"""The bench gives up on the drain (a failure, reported) once no accepted turn has been
ingested for this long: a slow drain under load is capacity, a stalled one is not (a
fixed 300 s cut off Neo4j runs that were still ingesting at load 30-40)."""

DRAIN_LIMIT_TOTAL_S = 1_800.0
"""And in any case after this long."""

SAMPLE_EVERY_S = 0.5
"""How often the progress sampler reads the backlog."""


class Progress:
    """Samples (time, published so far, jobs waiting) until stopped; Redis down: no sample."""

    def __init__(self, redis_url: str, published: list[str]) -> None:
        self._conn = redis.Redis.from_url(redis_url, socket_timeout=2)
        self._published = published
        self.samples: list[tuple[float, int, int]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Idempotent; the samples stay."""
        if not self._stop.is_set():
            self._stop.set()
            self._thread.join()
            self._conn.close()

    def _run(self) -> None:
        while not self._stop.wait(SAMPLE_EVERY_S):
            published = len(self._published)
            try:
                left = backlog(self._conn, INGEST_QUEUE)
            except redis.RedisError:
                continue
            waiting = left.queued + left.claimed
            self.samples.append((time.monotonic(), published, waiting))

    def sustained_per_s(self, min_backlog: int) -> float | None:
        """Ingested per second over the intervals with ``min_backlog`` jobs or more waiting
        at both ends (ingested = published - waiting); None when there never was one."""
        ingested = seconds = 0.0
        for (t0, p0, w0), (t1, p1, w1) in zip(self.samples, self.samples[1:], strict=False):
            if min(w0, w1) >= min_backlog:
                ingested += (p1 - w1) - (p0 - w0)
                seconds += t1 - t0
        return ingested / seconds if seconds else None


class Workers:
    """Ingest worker processes, each in its own process group (RQ's scheduler is a child)."""

    def __init__(self, env: dict[str, str], log_dir: Path) -> None:
        self.env = env
        self.log_dir = log_dir
        self.live: list[subprocess.Popen[bytes]] = []
        self.killed: list[subprocess.Popen[bytes]] = []
        self.reaped: list[subprocess.Popen[bytes]] = []
        self.crashed = 0
        self.crash_tails: list[str] = []
        self._logs: dict[int, Path] = {}
        self._count = 0
        self._stopped = False

    def start(self) -> None:
        self._count += 1
        path = self.log_dir / f"worker-{self._count}.log"
        with path.open("wb") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "turngraph.cli", "worker", "ingest"],
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.live.append(proc)
        self._logs[proc.pid] = path

    def check(self) -> None:
        """A worker that exited by itself crashed: counted, and replaced."""
        if self._stopped:
            return
        for proc in list(self.live):
            if proc.poll() is not None:
                self.crashed += 1
                tail = self._logs[proc.pid].read_text(errors="replace").splitlines()[-15:]
                self.crash_tails.append(f"exit {proc.returncode}:\n" + "\n".join(tail))
                self.live.remove(proc)
                self.start()

    def kill_one(self, rng: random.Random) -> None:
        """SIGKILL one worker's own process (not its group: like the OOM killer), replace it."""
        self.check()
        victim = rng.choice(self.live)
        victim.send_signal(signal.SIGKILL)
        victim.wait()
        self.live.remove(victim)
        self.killed.append(victim)
        self.start()

    def stop(self) -> int:
        """SIGTERM the live ones, then end every group (orphaned schedulers of SIGKILLed
        workers included); returns how many groups still had a process."""
        self.check()
        self._stopped = True
        for proc in self.live:
            proc.send_signal(signal.SIGTERM)
        for proc in self.live:
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        left = 0
        for proc in self.live + self.killed:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
                left += 1
            except ProcessLookupError:
                pass
        self.live, self.reaped = [], self.killed
        return left


def _publish(
    redis_url: str, stop: threading.Event, rate: float, published: list[str]
) -> PublisherStats:
    interval = 1 / rate
    with Publisher(redis_url=redis_url, max_queue_length=1_000_000) as publisher:
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
        publisher.flush(timeout_s=120)
        return publisher.close()


def _schedule(rng: random.Random, seconds: float, kills: int) -> list[tuple[float, str]]:
    """Fault times: worker kills uniformly at random, Redis at ~1/3, the graph at ~2/3."""
    faults = [(rng.uniform(0.05, 0.9) * seconds, "worker") for _ in range(kills)]
    faults += [
        (rng.uniform(0.3, 0.4) * seconds, "redis"),
        (rng.uniform(0.6, 0.7) * seconds, "graph"),
    ]
    return sorted(faults)


def _drained(conn: redis.Redis, accepted: list[str]) -> bool:
    """Nothing waiting or running, and every accepted event marked ingested, unless Redis
    forgot its job (SIGKILL before the append-only file had it): that one never comes."""
    try:
        left = backlog(conn, INGEST_QUEUE)
        if (
            left.queued
            + left.claimed
            + left.batches
            + left.started
            + left.intermediate
            + left.scheduled
        ):
            return False
        unmarked = [e for e, count in markers(conn, accepted).items() if not count]
        return not job_hashes_left(conn, unmarked, INGEST_QUEUE)
    except redis.RedisError:
        return False


def _ingested(conn: redis.Redis, accepted: list[str]) -> int:
    try:
        return sum(1 for count in markers(conn, accepted).values() if count)
    except redis.RedisError:
        return -1


def _wait_while_ingesting(conn: redis.Redis, accepted: list[str]) -> bool:
    """Drained (True), or False once nothing was ingested for :data:`DRAIN_STALL_S`."""
    return wait_while_progressing(
        lambda: _drained(conn, accepted),
        lambda: _ingested(conn, accepted),
        stall_s=DRAIN_STALL_S,
        total_s=DRAIN_LIMIT_TOTAL_S,
    )


def wait_while_progressing(
    done: Callable[[], bool],
    progress: Callable[[], int],
    *,
    stall_s: float,
    total_s: float,
    poll_s: float = 5.0,
) -> bool:
    """True once ``done()``; False when ``progress()`` has not changed for ``stall_s``, or
    after ``total_s`` in all."""
    started = last_change = time.monotonic()
    seen = progress()
    while time.monotonic() - started < total_s:
        if _wait(done, poll_s):
            return True
        now_seen = progress()
        if now_seen != seen:
            seen, last_change = now_seen, time.monotonic()
        elif time.monotonic() - last_change > stall_s:
            return False
    return False


def _wait(condition: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.25)  # polling other processes' progress
    return False


def _graph_driver(endpoints: ServiceEndpoints) -> neo4j.Driver:
    return neo4j.GraphDatabase.driver(
        endpoints.graph_uri, auth=(endpoints.graph_user, endpoints.graph_password)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=60.0, help="publishing time")
    parser.add_argument("--rate", type=float, default=100.0, help="events per second")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kills", type=int, default=20, help="worker SIGKILLs")
    parser.add_argument("--appendfsync", choices=["everysec", "always"], default="everysec")
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument(
        "--backlog", type=int, default=200, help="jobs waiting for the sustained rate to count"
    )
    parser.add_argument(
        "--graph",
        default="arcadedb,neo4j",
        help="graph engines, one chaos run each in this run (comma-separated)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.ERROR)
    structlog.configure(wrapper_class=structlog.make_filtering_bound_logger(logging.ERROR))
    outcomes = {e.strip(): run(e.strip(), args) for e in args.graph.split(",") if e.strip()}
    combined: dict[str, float | int | str] = {}
    for engine, (_, figures) in outcomes.items():
        combined.update({f"{engine}_{k}": v for k, v in figures.items()})
    print(result_line("chaos", **combined))
    return 0 if all(ok for ok, _ in outcomes.values()) else 1


def run(engine: str, args: argparse.Namespace) -> tuple[bool, dict[str, float | int | str]]:
    """One chaos run on ``engine``: its tables printed, (passed, the RESULT figures)."""
    print(f"== graph: {engine}")
    rng = random.Random(args.seed)
    log: list[tuple[float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        services = EmbeddedServices(Path(tmp), engine)
        services.redis = RedisServer(Path(tmp) / "redis", appendfsync=args.appendfsync)
        endpoints = services.start()
        t0 = time.monotonic()

        def note(what: str) -> None:
            log.append((time.monotonic() - t0, what))

        env = {**os.environ, **endpoints.as_env(), "TURNGRAPH_LOG_LEVEL": "WARNING"}
        workers = Workers(env, Path(tmp))
        orphans = 0
        progress: Progress | None = None
        try:
            for _ in range(args.workers):
                workers.start()
            stop = threading.Event()
            published: list[str] = []
            stats: list[PublisherStats] = []
            producer = threading.Thread(
                target=lambda: stats.append(
                    _publish(endpoints.redis_url, stop, args.rate, published)
                )
            )
            progress = Progress(endpoints.redis_url, published)
            progress.start()
            producer.start()
            publishing_started = time.monotonic()
            last_fault = [0.0]
            lock = threading.Lock()

            def inject(faults: list[tuple[float, str]]) -> None:
                """Worker kills and server kills run in two threads: a server's restart
                does not hold back the worker kills scheduled meanwhile."""
                for at, what in faults:
                    time.sleep(max(0.0, at - (time.monotonic() - t0)))
                    last_fault[0] = max(last_fault[0], time.monotonic())
                    if what == "worker":
                        with lock:
                            workers.kill_one(rng)
                        note(f"worker SIGKILLed, replaced ({len(published)} published)")
                        continue
                    server = services.redis if what == "redis" else services.graph
                    server.kill()
                    note(f"{what} SIGKILLed ({len(published)} published)")
                    server.start()
                    note(f"{what} restarted on its data")

            faults = _schedule(rng, args.seconds, args.kills)
            injectors = [
                threading.Thread(target=inject, args=([f for f in faults if kind(f)],))
                for kind in (lambda f: f[1] == "worker", lambda f: f[1] != "worker")
            ]
            for injector in injectors:
                injector.start()
            while any(injector.is_alive() for injector in injectors):
                with lock:
                    workers.check()
                time.sleep(0.5)  # watching the worker processes
            time.sleep(max(0.0, args.seconds - (time.monotonic() - t0)))
            stop.set()
            producer.join()
            offered_per_s = len(published) / (time.monotonic() - publishing_started)
            note(f"publishing stopped ({len(published)} published)")
            (sent,) = stats
            conn = redis.Redis.from_url(endpoints.redis_url)
            # accepted: Redis answered "enqueued" (or "already there" to a resend)
            answered = sent.enqueued + sent.duplicates
            accepted = published
            drained = _wait_while_ingesting(conn, accepted)
            drain_s = time.monotonic() - last_fault[0]
            progress.stop()
            sustained = progress.sustained_per_s(args.backlog)
            note("drained" if drained else f"gave up: nothing ingested for {DRAIN_STALL_S:.0f} s")
            workers.check()
            crashes = workers.crashed
            for tail in workers.crash_tails:
                print(f"a worker crashed, its log's last lines ({tail})")
            orphans = workers.stop()
            left = backlog(conn, INGEST_QUEUE)
            queue_stats = read_stats(conn, INGEST_QUEUE)
            marks = markers(conn, published)
            with _graph_driver(endpoints) as driver:
                counts = graph_counts(driver, endpoints.graph_database)
            missing = [e for e in published if counts.episodes[e] == 0]
            result = verdict(accepted, counts, marks, job_hashes_left(conn, missing, INGEST_QUEUE))
            conn.close()
        finally:
            if progress is not None:
                progress.stop()
            workers.stop()
            services.stop()
    stuck = left.total + (result.lost - result.lost_by_redis)
    print(table(["t_s", "event"], [[round(t, 1), what] for t, what in log]))
    print()
    print(
        table(
            ["published", "answered", "redis_enqueued", "accepted", "in_graph", "lost",
             "lost_by_redis", "duplicated", "written_twice", "mention_errors", "entities"],
            [[len(published), answered, queue_stats.enqueued, result.accepted, result.in_graph,
              result.lost, result.lost_by_redis, result.duplicated, result.written_twice,
              result.mention_errors, result.entities]],
        )
    )  # fmt: skip
    print()
    print(table(["left in", "jobs"], [[k, v] for k, v in vars(left).items()]))
    print(
        f"\nworker crashes: {crashes}; orphaned scheduler groups reaped: {orphans}; "
        f"appendfsync {args.appendfsync}; load average {os.getloadavg()[0]:.1f}"
    )
    kept_up = sustained is None
    print(
        f"offered {offered_per_s:.1f} events/s; sustained ingest "
        + (
            f"{sustained:.1f} events/s with a backlog of {args.backlog} or more"
            if sustained is not None
            else f"not measured: the backlog never reached {args.backlog} (the workers kept up)"
        )
    )
    capacity_bound = sustained is not None and offered_per_s >= sustained
    figures: dict[str, float | int | str] = {
        "kills": len(workers.reaped),
        "redis_kills": 1,
        "graph_kills": 1,
        "published": len(published),
        "accepted": result.accepted,
        "unanswered": len(published) - answered,
        "in_graph": result.in_graph,
        "lost": result.lost,
        "lost_by_redis": result.lost_by_redis,
        "duplicated": result.duplicated,
        "mention_errors": result.mention_errors,
        "unknown": result.unknown,
        "stuck": stuck,
        "crashes": crashes,
        "drain_s": round(drain_s, 1),
        "offered_per_s": round(offered_per_s, 1),
        "sustained_per_s": round(sustained, 1) if sustained is not None else -1,
        "kept_up": int(kept_up),
    }
    ok = (
        answered == len(published)
        and result.lost == result.duplicated == result.mention_errors == result.unknown == 0
        and stuck == 0
        and crashes == 0
        and (drain_s <= DRAIN_LIMIT_S or capacity_bound)
    )
    return ok, figures


if __name__ == "__main__":
    sys.exit(main())
