"""publish(): caller-blocking time, sustained throughput vs raw pipelined RPUSH, Redis down.

    python -m bench.publish [--events 20000] [--trials 3]

In one run, on an embedded Valkey it starts itself:

- sustained: one producer publishes N turns in a tight loop and flushes; events/s from the
  first call until Redis has answered for every event (redaction, serialization, the
  append and the count script's bound check included; no RQ job is written by a
  producer); Redis's time is that of the commands the producer sends (``MULTI``,
  ``RPUSH``, the count script's ``EVAL``; a tenant's ``FCALL``);
- reference: the same event payloads through raw pipelined ``RPUSH`` (256 per round trip);
- tenant: the same turns published with a tenant credential into the tenant's bounded
  inbox (``producers/tenant_inbox.py``; admission into RQ jobs is the ingest worker's);
- admission: the operator's inbox of N turns moved into RQ batch jobs
  (``Admission.burst``: each job references its turns, stored once in Redis), turns/s
  (and its ratio to the raw ``RPUSH`` of the same trial) and CPU per turn (this process
  plus every Redis command); Redis CPU per published turn, publish + admission, against
  the target of 5 µs;
- CPU per event of both (this process plus the Redis server's time in the command): on a
  shared machine the throughput ratio depends on whether Redis finds a free core, the CPU
  cost does not;
- caller-blocking time of ``publish()``: during the tight loop, and paced like busy editors
  (2,000 turns/s);
- Redis killed: ``publish()`` paced again, its latency and the exceptions raised (target 0).

Throughput is the median of ``--trials`` runs; the ratio is the median of the per-trial
ratios (each trial runs the reference and the publisher back to back).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from bench.report import percentile, result_line, table
from turngraph.credentials import issue
from turngraph.embedded import RedisServer
from turngraph.embedded.redis_server import APPENDFSYNC
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.publisher import Publisher
from turngraph.schemas.defaults import INGEST_QUEUE
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.workers.ingest.admission import Admission

BENCH_TENANT = "bench"
"""The tenant whose credential the tenant trials publish with (``turngraph credentials``)."""

PACED_RATE_PER_S = 2_000
"""Publication rate of the paced latency runs."""

PACED_EVENTS = 4_000
"""Events per paced run."""

RPUSH_BATCH = 256
"""Commands per pipeline round trip of the reference."""

ADMISSION_TARGET_PER_S = 30_000
"""SPEC §11: admission, one process."""

REDIS_US_PER_TURN_TARGET = 5
"""SPEC §11: Redis CPU per turn, publish + admission."""

_VOCABULARY = (
    "queue worker redis graph episode decision retry backoff session workspace bound "
    "policy lua script job payload schema recall latency index entity relation branch "
    "commit file symbol test fixture deploy config the a we should use because then and"
)
_WORDS = tuple(_VOCABULARY.split(" "))
_SNIPPETS = (
    "def enqueue(self, event: TurnEvent) -> Outcome:\n    return self._script(keys, args)\n",
    "decision: keep the retry in the ingest job; see producers/bounded_queue.py",
    "The api key rotation and the token refresh are handled by the settings loader.",
    "git checkout -b feature/bounded-queue && pytest tests/integration -q",
)


def make_events(count: int, session: str, seed: int = 7) -> list[TurnEvent]:
    """Realistic turns: 200-2,000 characters of prose, some code, some trigger words."""
    rng = random.Random(seed)
    events = []
    for index in range(count):
        words = " ".join(rng.choices(_WORDS, k=rng.randint(30, 300)))
        content = f"{words}\n{rng.choice(_SNIPPETS)}" if index % 3 == 0 else words
        events.append(
            TurnEvent.model_validate(
                {
                    "session_id": session,
                    "workspace": "w_bench",
                    "user": "u_bench",
                    "turn_index": index,
                    "role": "user" if index % 2 == 0 else "assistant",
                    "content": content,
                    "occurred_at": "2026-11-21T05:00:00+00:00",
                    "client": ClientInfo(name="bench.publish", version="1"),
                }
            )
        )
    return events


def server_us(conn: redis.Redis, *commands: str) -> float:
    """Microseconds Redis spent in ``commands`` since the last CONFIG RESETSTAT (a script's
    time includes the commands it ran)."""
    stats = conn.info("commandstats")
    return float(sum(stats.get(f"cmdstat_{command}", {}).get("usec", 0) for command in commands))


PUBLISH_COMMANDS = ("multi", "rpush", "eval")
"""What the operator's publisher sends per batch (``EXEC``'s time is theirs again)."""


def raw_rpush(url: str, payloads: list[bytes]) -> tuple[float, tuple[float, float]]:
    """Events/s of the same payloads through pipelined RPUSH, and CPU µs per event
    (this process plus the Redis server)."""
    conn = redis.Redis.from_url(url)
    conn.config_resetstat()
    cpu = time.process_time()
    began = time.perf_counter()
    for start in range(0, len(payloads), RPUSH_BATCH):
        pipe = conn.pipeline(transaction=False)
        for payload in payloads[start : start + RPUSH_BATCH]:
            pipe.rpush("bench:raw", payload)
        pipe.execute()
    rate = len(payloads) / (time.perf_counter() - began)
    cpu_us = (
        (time.process_time() - cpu) * 1e6 / len(payloads),
        server_us(conn, "rpush") / len(payloads),
    )
    conn.delete("bench:raw")
    conn.close()
    return rate, cpu_us


def sustained(
    url: str, events: list[TurnEvent], *, admin_url: str | None = None, tenant: str | None = None
) -> tuple[float, tuple[float, float], list[float], int, float]:
    """Events/s of publish + flush, CPU µs per event (this process plus the Redis
    server), the per-call times, the events enqueued, and Redis's main-thread CPU µs per
    event (protocol parsing and socket I/O too). With ``tenant`` (and its credential in
    ``url``) into the tenant's inbox instead of the RQ queue."""
    publisher = Publisher(
        redis_url=url,
        max_queue_length=10 * len(events),
        buffer_size=2 * len(events),
        tenant=tenant,
    )
    admin = redis.Redis.from_url(admin_url or url)
    admin.config_resetstat()
    main_thread = main_thread_s(admin)
    timings = []
    cpu = time.process_time()
    began = time.perf_counter()
    for event in events:
        t0 = time.perf_counter()
        publisher.publish(event)
        timings.append(time.perf_counter() - t0)
    if not publisher.flush(timeout_s=120):
        raise RuntimeError("publisher did not drain")
    rate = len(events) / (time.perf_counter() - began)
    cpu_us = (
        (time.process_time() - cpu) * 1e6 / len(events),
        server_us(admin, *(("fcall",) if tenant else PUBLISH_COMMANDS)) / len(events),
    )
    main_us = (main_thread_s(admin) - main_thread) * 1e6 / len(events)
    admin.close()
    return rate, cpu_us, timings, publisher.close().enqueued, main_us


def redis_us(conn: redis.Redis) -> tuple[float, float]:
    """Microseconds Redis spent in every command since the last CONFIG RESETSTAT: the
    commands a ``MULTI`` queued or a Lua script ran are counted under their own names, and
    ``EXEC``'s time is theirs again: it is left out (counted, it doubled the figure). Two
    figures: without ``EVALSHA`` (the script's commands only, its Lua left out) and with
    it (the script's commands counted twice): the true figure lies between."""
    stats = conn.info("commandstats")
    commands = sum(v.get("usec", 0) for k, v in stats.items() if k not in _NOT_COUNTED)
    scripts = stats.get("cmdstat_evalsha", {}).get("usec", 0)
    return float(commands), float(commands + scripts)


_NOT_COUNTED = {
    "cmdstat_info", "cmdstat_config", "cmdstat_config|resetstat", "cmdstat_exec",
    "cmdstat_evalsha",
}  # fmt: skip


def main_thread_s(conn: redis.Redis) -> float:
    """CPU seconds of Redis's main thread (user + system): every command, the socket
    reads and writes, the event loop; the commandstats leave the last two out."""
    cpu = conn.info("cpu")
    return float(cpu["used_cpu_user_main_thread"]) + float(cpu["used_cpu_sys_main_thread"])


def admission(url: str, count: int) -> tuple[float, tuple[float, float], float, float]:
    """Turns/s of admission moving the operator's inbox (``count`` entries) into RQ batch
    jobs (``Admission.burst``), CPU µs per turn (this process plus the Redis server,
    every command of the path: the move script, marker reads, the batch job's MULTI; see
    :func:`redis_us`), Redis's µs per turn with the scripts counted whole as well, and
    Redis's main-thread CPU µs per turn."""
    conn = redis.Redis.from_url(url)
    queue = Queue(INGEST_QUEUE, connection=conn, serializer=JSONSerializer)
    measured: list[tuple[float, float, tuple[float, float], float]] = []

    def done() -> None:  # the burst's worker: every turn is in a batch job
        measured.append(
            (time.perf_counter(), time.process_time(), redis_us(conn), main_thread_s(conn))
        )
        queue.empty()

    conn.config_resetstat()
    main_thread = main_thread_s(conn)
    cpu = time.process_time()
    began = time.perf_counter()
    Admission(conn, queue).burst(done)
    ((ended, cpu_end, (server, with_scripts), main_thread_end),) = measured
    admitted = read_stats(conn, INGEST_QUEUE).admitted
    conn.close()
    if admitted != count:
        raise RuntimeError(f"admission took {admitted} of {count} turns")
    cpu_us = ((cpu_end - cpu) * 1e6 / count, server / count)
    main_us = (main_thread_end - main_thread) * 1e6 / count
    return count / (ended - began), cpu_us, with_scripts / count, main_us


def paced(publisher: Publisher, events: list[TurnEvent]) -> tuple[list[float], int]:
    """Per-call times at PACED_RATE_PER_S, and how many calls raised."""
    interval = 1.0 / PACED_RATE_PER_S
    timings, exceptions = [], 0
    next_at = time.perf_counter()
    for event in events:
        now = time.perf_counter()
        if now < next_at:
            time.sleep(next_at - now)  # pacing, like an editor between turns
        next_at += interval
        t0 = time.perf_counter()
        try:
            publisher.publish(event)
        except Exception:
            exceptions += 1
        timings.append(time.perf_counter() - t0)
    return timings, exceptions


def _us(value: float) -> float:
    return round(value * 1e6, 1)


def _ms(value: float) -> str:
    return f"{value * 1000:.4f}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="publish() latency and throughput")
    parser.add_argument("--events", type=int, default=20_000)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument(
        "--appendfsync", choices=["everysec", "always"], default=APPENDFSYNC, help="AOF policy"
    )
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-publish-") as tmp:
        server = RedisServer(Path(tmp) / "redis", appendfsync=args.appendfsync)
        server.start()
        try:
            url = server.url
            admin = redis.Redis.from_url(url)
            tenant_url = issue(admin, BENCH_TENANT).redis_url(url)
            raw_rates, pub_rates, raw_cpu, pub_cpu, tight = [], [], [], [], []
            tenant_rates, tenant_cpu = [], []
            admit_rates: list[float] = []
            admit_cpu: list[tuple[float, float]] = []
            admit_main: list[float] = []
            pub_main: list[float] = []
            admit_scripts: list[float] = []
            for trial in range(args.trials):
                events = make_events(args.events, f"s_trial{trial}")
                payloads = [event.model_dump_json().encode() for event in events]
                rate, cpu_us = raw_rpush(url, payloads)
                raw_rates.append(rate)
                raw_cpu.append(cpu_us)
                admin.flushdb()
                rate, cpu_us, timings, enqueued, main_us = sustained(url, events)
                assert enqueued == len(events), "every event must be enqueued"
                pub_rates.append(rate)
                pub_cpu.append(cpu_us)
                pub_main.append(main_us)
                tight.extend(timings)
                rate, cpu_us, scripts_us, main_us = admission(url, len(events))
                admit_rates.append(rate)
                admit_cpu.append(cpu_us)
                admit_scripts.append(scripts_us)
                admit_main.append(main_us)
                admin.flushdb()
                rate, cpu_us, _, enqueued, _ = sustained(
                    tenant_url, events, admin_url=url, tenant=BENCH_TENANT
                )
                assert enqueued == len(events), "every event must reach the tenant's inbox"
                tenant_rates.append(rate)
                tenant_cpu.append(cpu_us)
                admin.flushdb()

            publisher = Publisher(redis_url=url, max_queue_length=10**6, buffer_size=10_000)
            up_timings, up_exceptions = paced(publisher, make_events(PACED_EVENTS, "s_paced"))
            publisher.flush(timeout_s=30)
            server.kill()  # Redis gone, without a goodbye
            down_timings, down_exceptions = paced(publisher, make_events(PACED_EVENTS, "s_down"))
            down_stats = publisher.close(timeout_s=0.1)
        finally:
            server.stop()

    raw_rate, pub_rate = statistics.median(raw_rates), statistics.median(pub_rates)
    # Each trial runs both back to back; the median of the paired ratios is the least
    # sensitive to other processes taking the CPU in between.
    ratios = [pub / raw for pub, raw in zip(pub_rates, raw_rates, strict=True)]
    ratio = statistics.median(ratios)
    admit_rate = statistics.median(admit_rates)
    admit_ratios = [a / raw for a, raw in zip(admit_rates, raw_rates, strict=True)]
    admit_ratio = statistics.median(admit_ratios)
    tenant_rate = statistics.median(tenant_rates)
    tenant_ratios = [t / raw for t, raw in zip(tenant_rates, raw_rates, strict=True)]
    tenant_ratio = statistics.median(tenant_ratios)
    rows = [
        [label, _us(percentile(t, 50)), _us(percentile(t, 99)), _us(percentile(t, 99.9)),
         _us(max(t)), raised]
        for label, t, raised in (
            ("publish() tight loop", tight, 0),
            (f"publish() paced {PACED_RATE_PER_S}/s", up_timings, up_exceptions),
            ("publish() Redis killed", down_timings, down_exceptions),
        )
    ]  # fmt: skip
    print(
        f"load average (1 min) during the run: {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs\n"
    )
    print(table(["caller-blocking time", "p50_us", "p99_us", "p99.9_us", "max_us", "raised"], rows))
    print()
    print(
        table(
            ["throughput, one producer", "events/s", "client_cpu_us", "redis_cpu_us", "trials"],
            [
                [
                    "raw pipelined RPUSH (reference)",
                    round(raw_rate),
                    *_cpu(raw_cpu),
                    _trials(raw_rates),
                ],
                ["Publisher: publish + flush", round(pub_rate), *_cpu(pub_cpu), _trials(pub_rates)],
                ["ratio (median of paired trials)", round(ratio, 3), "", "", _trials(ratios, 3)],
                [
                    "admission: inbox -> RQ batch jobs",
                    round(admit_rate),
                    *_cpu(admit_cpu),
                    _trials(admit_rates),
                ],
                [
                    "admission ratio (paired trials)",
                    round(admit_ratio, 3),
                    "",
                    "",
                    _trials(admit_ratios, 3),
                ],
                [
                    "Publisher, tenant credential (inbox)",
                    round(tenant_rate),
                    *_cpu(tenant_cpu),
                    _trials(tenant_rates),
                ],
                [
                    "tenant ratio (paired trials)",
                    round(tenant_ratio, 3),
                    "",
                    "",
                    _trials(tenant_ratios, 3),
                ],
            ],
        )
    )
    print(
        "\nadmission, Redis CPU per turn: commands "
        f"{_cpu(admit_cpu)[1]:.1f} us, scripts' commands counted twice "
        f"{statistics.median(admit_scripts):.1f} us; main thread (commands, socket I/O, "
        f"event loop) {statistics.median(admit_main):.1f} us"
    )
    print(
        f"publish, Redis CPU per event: commands {_cpu(pub_cpu)[1]:.1f} us; main thread "
        f"{statistics.median(pub_main):.1f} us (the turns' JSON parsed off the socket too)"
    )
    redis_per_turn = _cpu(pub_cpu)[1] + _cpu(admit_cpu)[1]
    print(
        f"Redis CPU per published turn, publish + admission (commands): {redis_per_turn:.1f} us"
        f" (target <= {REDIS_US_PER_TURN_TARGET}); admission {round(admit_rate)} turns/s"
        f" (target >= {ADMISSION_TARGET_PER_S}), {admit_ratio:.3f} of raw RPUSH in the same run"
    )
    print(
        f"\nRedis killed: {down_stats.dropped_local} events dropped from the full local buffer "
        f"(counted), {down_stats.abandoned} abandoned at close, {down_exceptions} exceptions."
    )
    print(
        result_line(
            "publish",
            p50_ms=_ms(percentile(up_timings, 50)),
            p99_ms=_ms(percentile(up_timings, 99)),
            tight_p99_ms=_ms(percentile(tight, 99)),
            events_per_s=round(pub_rate),
            rpush_events_per_s=round(raw_rate),
            ratio=round(ratio, 3),
            client_cpu_us=_cpu(pub_cpu)[0],
            redis_cpu_us=_cpu(pub_cpu)[1],
            rpush_client_cpu_us=_cpu(raw_cpu)[0],
            rpush_redis_cpu_us=_cpu(raw_cpu)[1],
            admission_turns_per_s=round(admit_rate),
            admission_ratio=round(admit_ratio, 3),
            admission_client_cpu_us=_cpu(admit_cpu)[0],
            admission_redis_cpu_us=_cpu(admit_cpu)[1],
            admission_redis_scripts_twice_us=round(statistics.median(admit_scripts), 1),
            admission_redis_main_thread_us=round(statistics.median(admit_main), 1),
            publish_redis_main_thread_us=round(statistics.median(pub_main), 1),
            redis_cpu_us_per_turn=round(redis_per_turn, 1),
            tenant_events_per_s=round(tenant_rate),
            tenant_ratio=round(tenant_ratio, 3),
            tenant_client_cpu_us=_cpu(tenant_cpu)[0],
            tenant_redis_cpu_us=_cpu(tenant_cpu)[1],
            down_p99_ms=_ms(percentile(down_timings, 99)),
            down_exceptions=down_exceptions,
        )
    )
    return 0


def _cpu(samples: list[tuple[float, float]]) -> tuple[float, float]:
    """Median client and Redis CPU µs per event over the trials."""
    return (
        round(statistics.median(c for c, _ in samples), 1),
        round(statistics.median(r for _, r in samples), 1),
    )


def _trials(values: list[float], digits: int = 0) -> str:
    return " ".join(f"{value:.{digits}f}" for value in values)


if __name__ == "__main__":
    raise SystemExit(main())
