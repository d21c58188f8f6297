"""The open loops of ``bench.recall_shards``: every deployment offered the same rates, in
slices taking turns, each deployment's samples pooled over its slices per rate.

At each offered rate (lowest first) the deployments answer ``rounds`` slices each, in
turn (A B C A B C ...), so the load others put on the shared cores falls on all of them
alike; a slice is ``answers / rounds`` requests. Per deployment and rate: the answers'
latencies (pooled, for p50/p99), the replicas' CPU, their threads' wait for a core and
runs on one (``/proc/*/schedstat``), the senders' wait, the bench's own full
collections, and each slice's p99.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.process import BaseProcess

from bench.proc import cpu_seconds, machine_busy_seconds, scheduling
from bench.report import percentile
from bench.shard_load import CollectorPauses, Load, open_loop
from turngraph.schemas.keys import RECALL_REQUESTS


@dataclass
class OpenRun:
    """One deployment's open loop at one offered rate, over all its slices."""

    rate: float
    offered: Load = field(default_factory=Load)
    serve_cpu_s: float = 0.0
    runq_s: float = 0.0
    runs_total: int = 0
    bench_runq_s: float = 0.0
    busy_s: float = 0.0
    wall_s: float = 0.0
    slice_p99_ms: list[float] = field(default_factory=list)
    """The open loop's p99 in each slice (the machine's load moves them)."""
    slice_runq_ms: list[float] = field(default_factory=list)
    """The replicas' wait for a core per answer in each slice."""
    bench_gc_ms: float = 0.0
    """The bench process's full collections during this deployment's slices."""
    bench_gcs: int = 0

    @property
    def answers(self) -> int:
        return len(self.offered.latencies)

    def per_answer_ms(self, seconds: float) -> float:
        return seconds * 1000 / max(1, self.answers)

    @property
    def serve_cpu_ms(self) -> float:
        """The replicas' CPU per answer."""
        return self.per_answer_ms(self.serve_cpu_s)

    @property
    def runq_ms(self) -> float:
        """The replicas' time runnable but waiting for a core, per answer."""
        return self.per_answer_ms(self.runq_s)

    @property
    def runs(self) -> float:
        """Times the replicas' threads were put on a core, per answer."""
        return self.runs_total / max(1, self.answers)

    @property
    def bench_runq_ms(self) -> float:
        """The senders' time waiting for a core, per request."""
        return self.per_answer_ms(self.bench_runq_s)

    @property
    def machine_busy(self) -> float:
        """Share of the machine's cores busy (anyone's work) during the slices."""
        return self.busy_s / (max(self.wall_s, 1e-9) * (os.cpu_count() or 1))

    @property
    def p50_ms(self) -> float:
        return percentile(self.offered.latencies, 50)

    @property
    def p99_ms(self) -> float:
        return percentile(self.offered.latencies, 99)


@dataclass
class Phase:
    """One deployment: its replicas bootstrapped, then its client loads."""

    label: str
    shards: int
    processes: int = 1
    requests_key: str = RECALL_REQUESTS
    """Its own request lists: deployments serving the same shards must not share them."""
    ready_s: dict[str, float] = field(default_factory=dict)
    boot_cpu_s: dict[str, float] = field(default_factory=dict)
    """CPU a replica used up to ready (making the synthetic records included)."""
    rss_mb: dict[str, float] = field(default_factory=dict)
    """Largest of after ready and after the loads."""
    held: dict[str, int] = field(default_factory=dict)
    saturation: Load = field(default_factory=Load)
    saturation_after: Load = field(default_factory=Load)
    """The closed loop again after the open loops: the machine the rates met may have
    had less to give than the one they were taken from."""
    open: dict[float, OpenRun] = field(default_factory=dict)
    """Share of the unsharded saturation -> the open loop at that rate."""
    no_replica_ms: list[float] = field(default_factory=list)
    procs: dict[str, BaseProcess] = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)


@dataclass
class OpenPlan:
    """The offered rates (requests/s, the same for every deployment) and how many answers
    each deployment gives at each, in how many slices."""

    rates: dict[float, float]
    """Share of the unsharded saturation -> requests/s."""
    answers: int
    rounds: int
    workspaces: int
    label_shards: int

    def slice_seconds(self, rate: float) -> float:
        return math.ceil(self.answers / self.rounds) / rate


def open_rounds(
    deployments: Sequence[Phase],
    url: str,
    plan: OpenPlan,
    queries: list[str],
    pauses: CollectorPauses,
) -> None:
    """Each deployment's open loop at each rate of ``plan``, in slices taking turns."""
    for share, rate in sorted(plan.rates.items()):
        runs = [deployment.open.setdefault(share, OpenRun(rate)) for deployment in deployments]
        for _ in range(plan.rounds):
            for deployment, run in zip(deployments, runs, strict=True):
                _slice(deployment, run, url, plan, queries, pauses)


def _slice(
    deployment: Phase,
    run: OpenRun,
    url: str,
    plan: OpenPlan,
    queries: list[str],
    pauses: CollectorPauses,
) -> None:
    pids = list(deployment.pids.values())
    cpu_before = sum(cpu_seconds(pid) for pid in pids)
    sched_before = [scheduling(pid) for pid in pids]
    busy_before, wall_before = machine_busy_seconds(), time.monotonic()
    gc_before, gcs_before = pauses.seconds, pauses.count
    load = open_loop(
        url,
        deployment.shards,
        plan.workspaces,
        queries,
        run.rate,
        plan.slice_seconds(run.rate),
        deployment.requests_key,
        label_shards=plan.label_shards,
    )
    run.serve_cpu_s += sum(cpu_seconds(pid) for pid in pids) - cpu_before
    pairs = list(zip([scheduling(pid) for pid in pids], sched_before, strict=True))
    waited = sum(after[0] - before[0] for after, before in pairs)
    run.slice_runq_ms.append(waited * 1000 / max(1, len(load.latencies)))
    run.runq_s += waited
    run.runs_total += sum(after[1] - before[1] for after, before in pairs)
    run.bench_runq_s += load.senders_waited_s
    run.bench_gc_ms += (pauses.seconds - gc_before) * 1000
    run.bench_gcs += pauses.count - gcs_before
    run.busy_s += machine_busy_seconds() - busy_before
    run.wall_s += time.monotonic() - wall_before
    run.slice_p99_ms.append(percentile(load.latencies, 99))
    run.offered.latencies.extend(load.latencies)
    run.offered.shards.extend(load.shards)
    run.offered.failures += load.failures
    run.offered.seconds += load.seconds
