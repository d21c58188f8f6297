"""Redaction time on adversarial texts: milliseconds per 100k characters, and the growth
exponent between two sizes (1.0 is linear, 2.0 quadratic).

    python -m bench.redaction [--chars 200000] [--bound-ms 25] [--repeat 5]

Each family of ``bench/redaction_families.py`` is redacted at ``--chars`` and at a quarter
of it (best of ``--repeat``); a family fails when it takes more than ``--bound-ms`` per 100k
characters at the larger size, or grows faster than ``n^1.5`` where the larger size takes
20 ms or more (below that, the ratio of two timings on a shared machine is noise: the
quadratic family of issue 26 took 18.6 s at 100k characters). Times are the thread's CPU
time, not wall time. The reference row is
plain ASCII prose without any trigger (one lowercase copy and one automaton pass).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time

from bench.redaction_families import FAMILIES
from bench.report import result_line, table
from turngraph.producers.redaction import redact

MAX_EXPONENT = 1.5
"""Above this growth exponent between the two sizes a family counts as superlinear."""

MIN_MS_FOR_GROWTH = 20.0
"""The growth exponent is judged only where the larger size takes at least this long."""


def _best_ms(text: str, repeat: int) -> float:
    """CPU time of this thread (a shared machine's preemptions, 4-10 ms each at a load of
    10 on 2 cores, are not redaction's), best of ``repeat``."""
    best = math.inf
    for _ in range(repeat):
        started = time.thread_time()
        redact(text)
        best = min(best, time.thread_time() - started)
    return best * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chars", type=int, default=200_000)
    parser.add_argument("--bound-ms", type=float, default=25.0, help="CPU ms per 100k characters")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    builders = {"reference_prose": lambda n: ("the quick brown fox jumps over it " * n)[:n]}
    builders.update(FAMILIES)
    rows = []
    worst_per_100k = worst_exponent = 0.0
    failed = []
    for name, build in builders.items():
        large, small = build(args.chars), build(args.chars // 4)
        large_ms, small_ms = _best_ms(large, args.repeat), _best_ms(small, args.repeat)
        per_100k = large_ms * 100_000 / len(large)
        exponent = math.log(max(large_ms, 1e-3) / max(small_ms, 1e-3)) / math.log(
            len(large) / len(small)
        )
        superlinear = large_ms >= MIN_MS_FOR_GROWTH and exponent > MAX_EXPONENT
        ok = per_100k <= args.bound_ms and not superlinear
        if not ok:
            failed.append(name)
        worst_per_100k = max(worst_per_100k, per_100k)
        if large_ms >= MIN_MS_FOR_GROWTH:
            worst_exponent = max(worst_exponent, exponent)
        rows.append(
            [name, len(large), round(small_ms, 2), round(large_ms, 2), round(per_100k, 2),
             round(exponent, 2), "ok" if ok else "FAIL"]
        )  # fmt: skip
    print(table(["family", "chars", "quarter_ms", "full_ms", "ms_per_100k", "exponent", ""], rows))
    print(f"\nload average {os.getloadavg()[0]:.1f}; bound {args.bound_ms} ms per 100k characters")
    print(
        result_line(
            "redaction",
            families=len(FAMILIES),
            chars=args.chars,
            worst_ms_per_100k=round(worst_per_100k, 2),
            worst_exponent=round(worst_exponent, 2),
            bound_ms_per_100k=args.bound_ms,
            failed=len(failed),
        )
    )
    return 0 if not failed else 1


if __name__ == "__main__":
    sys.exit(main())
