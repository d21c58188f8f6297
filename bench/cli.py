"""The command line's everyday calls: what ``turngraph recall``, ``publish`` and ``status``
cost from a shell, through the local endpoint and on the full code path.

``python -m bench.cli [--runs N]`` starts the embedded services, a recall worker (in this
process) and a few stored memories, then runs, N times per row, as a person types them:

- ``python -c pass``: the bare interpreter start-up, the reference of this run;
- ``turngraph recall QUERY``, ``turngraph publish TEXT`` (a new turn index each run) and
  ``turngraph status`` with no endpoint running (the full
  code path: settings, its own Redis connection);
- the same with ``turngraph endpoint`` running (what ``turngraph up`` runs): the fast
  path, one loopback request; and ``publish`` through argparse and the full command line
  before its request to the endpoint (what ``publish -`` and ``publish --git`` take).

Ends with ``RESULT cli ...`` (wall times in ms; ``*_over_python_pass``: ratios to the
reference of the same run, steadier than the times on a loaded machine).
"""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.hooks_endpoint import start_endpoint, stop_endpoint
from bench.report import percentile, result_line, table
from bench.seeded import seeded_services
from turngraph.producers.consent import ConsentStore, consent_endpoint

MEMORIES = [
    "decision: the ingest queue uses drop_oldest when it is full",
    "We keep Redis at maxmemory-policy noeviction; evicted job hashes vanish silently.",
    "preference: answers use British English spelling",
]
QUERY = "which drop policy does the ingest queue use?"
STARTUP_S = 120.0


def _timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, timeout=120)
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv[1:]} failed: {done.stderr[-500:]!r}")
    return elapsed, done.stdout


def _series(runs: int, one: Callable[[], tuple[float, bytes]]) -> tuple[list[float], bytes]:
    times, out = [], b""
    for _ in range(runs):
        elapsed, out = one()
        times.append(elapsed)
    return times, out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="turngraph recall/status from a shell")
    parser.add_argument("--runs", type=int, default=20, help="runs per row (default 20)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp_name:
        tmp = Path(tmp_name)
        project = tmp / "project"
        project.mkdir()
        with seeded_services(tmp, project, MEMORIES) as seeded:
            env = seeded.env
            ConsentStore(seeded.settings.data_dir).enable(  # publish needs it
                seeded.workspace,
                consent_endpoint(seeded.settings.redis_url, seeded.settings.data_dir),
            )
            exe = str(Path(sys.executable).parent / "turngraph")
            recall_argv = [exe, "recall", QUERY]
            status_argv = [exe, "status"]
            turns = itertools.count()

            def run(argv: list[str]) -> Callable[[], tuple[float, bytes]]:
                return lambda: _timed(argv, env, project)

            def publish(*command: str) -> Callable[[], tuple[float, bytes]]:
                return lambda: _timed([*(command or [exe]), "publish", "a note from bench.cli",
                                       "--session", "bench-cli", "--turn-index",
                                       str(next(turns))], env, project)  # fmt: skip

            rows: dict[str, tuple[list[float], bytes]] = {}
            rows["python -c pass (reference)"] = _series(
                args.runs, run([sys.executable, "-c", "pass"])
            )
            _timed(recall_argv, env, project)  # the recall worker's first answer warms it
            _timed(status_argv, env, project)  # (and the first runs write the bytecode)
            rows["recall, full path"] = _series(args.runs, run(recall_argv))
            rows["status, full path"] = _series(args.runs, run(status_argv))
            rows["publish, full path"] = _series(args.runs, publish())
            endpoint = start_endpoint(env, seeded.settings.data_dir)
            try:
                _timed(recall_argv, env, project)
                _timed(status_argv, env, project)
                rows["recall, through the endpoint"] = _series(args.runs, run(recall_argv))
                rows["status, through the endpoint"] = _series(args.runs, run(status_argv))
                rows["publish, through the endpoint"] = _series(args.runs, publish())
                rows["publish, argparse then the endpoint"] = _series(
                    args.runs, publish(sys.executable, "-m", "turngraph.cli")
                )
            finally:
                stop_endpoint(endpoint)

    print(f"load average (1 min): {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs, "
          f"{args.runs} runs per row\n")  # fmt: skip
    body = [
        [name, round(percentile(t, 50), 1), round(percentile(t, 99), 1), round(max(t), 1),
         "yes" if b"drop_oldest" in out else ("-" if "recall" not in name else "no")]
        for name, (t, out) in rows.items()
    ]  # fmt: skip
    print(table(["command, as typed in a shell", "p50_ms", "p99_ms", "max_ms", "found"], body))
    p50 = {name: percentile(t, 50) for name, (t, _) in rows.items()}
    ref = p50["python -c pass (reference)"]
    fast = p50["recall, through the endpoint"]
    print()
    print(result_line(
        "cli",
        python_pass_p50_ms=round(ref, 1),
        recall_full_p50_ms=round(p50["recall, full path"], 1),
        status_full_p50_ms=round(p50["status, full path"], 1),
        recall_endpoint_p50_ms=round(fast, 1),
        recall_endpoint_p99_ms=round(percentile(rows["recall, through the endpoint"][0], 99), 1),
        status_endpoint_p50_ms=round(p50["status, through the endpoint"], 1),
        publish_full_p50_ms=round(p50["publish, full path"], 1),
        publish_endpoint_p50_ms=round(p50["publish, through the endpoint"], 1),
        publish_argparse_endpoint_p50_ms=round(p50["publish, argparse then the endpoint"], 1),
        publish_full_over_endpoint=round(
            p50["publish, full path"] / p50["publish, through the endpoint"], 2
        ),
        recall_endpoint_over_python_pass=round(fast / ref, 2),
        recall_full_over_endpoint=round(p50["recall, full path"] / fast, 2),
        recall_endpoint_p50_within_150ms="yes" if fast <= 150 else "no",
        runs=args.runs,
    ))  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
