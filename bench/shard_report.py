"""What ``bench.recall_shards`` prints: the replicas, the loads per offered rate, each
slice, and the ``RESULT`` line (at the rate chosen before the run, ``--result-share``)."""

from __future__ import annotations

import argparse

from bench.report import percentile, result_line, table
from bench.shard_open import OpenRun, Phase
from turngraph.schemas.shards import NO_REPLICA


def _ratio(value: float, reference: float) -> float:
    return round(value / reference, 3) if reference else 0.0


def report(args: argparse.Namespace, unsharded: Phase, sharded: Phase, *more: Phase) -> None:
    """Print the replicas, the loads at every rate, each slice and the ``RESULT`` line."""
    deployments = (sharded, *more, unsharded)
    shares = sorted(unsharded.open)
    rates = ", ".join(f"{unsharded.open[s].rate:.1f}/s ({s:.2f})" for s in shares)
    print(
        f"{args.memories} memories over {args.workspaces} workspaces; embedding "
        f"{args.embedding}; bootstrapped {'apart' if args.boot_apart else 'at once'}; "
        f"open loops at {rates} of the unsharded saturation, the same for all, "
        f"{args.rounds} slices each per rate taking turns"
    )
    rows = []
    for phase in deployments:
        for name in phase.ready_s:
            held = phase.held.get(name, 0)
            boot = phase.boot_cpu_s[name]
            rows.append(
                [
                    name,
                    held,
                    phase.ready_s[name],
                    boot,
                    boot * 1e6 / max(held, 1),
                    phase.rss_mb[name],
                ]
            )
    headers = ["replica", "memories", "ready_s", "boot_cpu_s", "boot_cpu_us_per_memory", "rss_mb"]
    print(table(headers, rows))
    load_rows: list[list[object]] = []
    for phase in deployments:
        for when, loop in (("closed", phase.saturation), ("closed after", phase.saturation_after)):
            closed = loop.latencies
            load_rows.append(
                [
                    f"{phase.label} {when}",
                    len(closed),
                    percentile(closed, 50),
                    percentile(closed, 99),
                    loop.per_s,
                    loop.failures,
                    *[""] * 6,
                ]
            )
    for share in shares:
        reference = unsharded.open[share].p99_ms
        for phase in deployments:
            run: OpenRun = phase.open[share]
            load_rows.append(
                [
                    f"{phase.label} open {share:.2f}",
                    run.answers,
                    run.p50_ms,
                    run.p99_ms,
                    run.offered.per_s,
                    run.offered.failures,
                    _ratio(run.p99_ms, reference),
                    run.serve_cpu_ms,
                    run.runq_ms,
                    run.runs,
                    run.bench_runq_ms,
                    run.machine_busy,
                ]
            )
    print(
        table(
            [
                *("deployment", "n", "p50_ms", "p99_ms", "per_s", "failures", "p99_ratio"),
                *("replica_cpu_ms", "replica_runq_ms", "replica_runs", "bench_runq_ms", "busy"),
            ],
            load_rows,
        )
    )
    print(
        "n: answers the percentiles rest on (open: pooled over the slices); per answer: "
        "replica_runq_ms, bench_runq_ms the time the replicas' threads (the open loop's "
        "senders) were runnable but waiting for a core; replica_runs the times the "
        "replicas' threads were put on a core; p99_ratio against unsharded at that rate"
    )
    for share in shares:
        for phase in deployments:
            run = phase.open[share]
            per_shard = "/".join(str(n) for n in run.offered.slowest_by_shard(args.shards))
            slices = ", ".join(
                f"{p99:.1f} ({runq:.1f})"
                for p99, runq in zip(run.slice_p99_ms, run.slice_runq_ms, strict=True)
            )
            print(
                f"{phase.label} at {run.rate:.1f}/s: p99 per slice (replica_runq_ms) {slices}; "
                f"slowest 1 % by shard {per_shard}; the bench's full collections "
                f"{run.bench_gcs}, {run.bench_gc_ms:.1f} ms"
            )
    print(
        f"no replica for shard {args.shards - 1}: {len(sharded.no_replica_ms)} requests, "
        f"max {max(sharded.no_replica_ms):.1f} ms, all degraded {NO_REPLICA}"
    )
    print(result(args, unsharded, sharded, *more))


def result(args: argparse.Namespace, unsharded: Phase, sharded: Phase, *more: Phase) -> str:
    """The ``RESULT`` line: latencies at ``--result-share``, the p99 ratio at every rate."""
    at, ref = sharded.open[args.result_share], unsharded.open[args.result_share]
    max_rss = max(sharded.rss_mb.values())
    per_share = {
        f"p99_ratio_{round(s * 100)}": _ratio(sharded.open[s].p99_ms, unsharded.open[s].p99_ms)
        for s in sorted(unsharded.open)
    }
    return result_line(
        "recall_shards",
        memories=args.memories,
        workspaces=args.workspaces,
        embedding=args.embedding,
        shards=args.shards,
        max_replica_rss_mb=round(max_rss),
        unsharded_rss_mb=round(unsharded.rss_mb["unsharded"]),
        rss_ratio=round(max_rss / unsharded.rss_mb["unsharded"], 3),
        max_ready_s=round(max(sharded.ready_s.values()), 1),
        unsharded_ready_s=round(unsharded.ready_s["unsharded"], 1),
        load_share=args.result_share,
        offered_per_s=round(ref.rate, 1),
        answers=min(at.answers, ref.answers),
        p50_ms=round(at.p50_ms, 1),
        p99_ms=round(at.p99_ms, 1),
        unsharded_p50_ms=round(ref.p50_ms, 1),
        unsharded_p99_ms=round(ref.p99_ms, 1),
        p99_ratio=_ratio(at.p99_ms, ref.p99_ms),
        **per_share,
        **(
            {"one_process_p99_ms": round(more[0].open[args.result_share].p99_ms, 1)} if more else {}
        ),
        runq_ratio=_ratio(at.runq_ms, ref.runq_ms),
        saturation_per_s=round(sharded.saturation.per_s, 1),
        unsharded_saturation_per_s=round(unsharded.saturation.per_s, 1),
        unsharded_saturation_after_per_s=round(unsharded.saturation_after.per_s, 1),
        no_replica_ms=round(max(sharded.no_replica_ms), 1),
    )
