"""Offline extractor quality and speed on the labelled turns: ``python -m bench.extraction``.

Prints per-type precision and recall (reference types first), the extraction time per
turn, and ends with one line ``RESULT extraction key=value …``.
"""

from __future__ import annotations

import argparse
import sys
import time

from workers.extraction.offline import OfflineExtractor
from workers.extraction.scoring import (
    REFERENCE_TYPES,
    Report,
    TypeScore,
    as_events,
    load_dataset,
    score,
)


def _row(name: str, s: TypeScore) -> str:
    return f"{name:<16}{s.tp:>5}{s.fp:>5}{s.fn:>5}{s.precision:>11.3f}{s.recall:>9.3f}"


def render(report: Report) -> str:
    lines = [f"{'type':<16}{'tp':>5}{'fp':>5}{'fn':>5}{'precision':>11}{'recall':>9}"]
    for name in REFERENCE_TYPES:
        lines.append(_row(name, report.per_type.get(name, TypeScore())))
    lines.append(_row("= reference", report.reference))
    for name in sorted(set(report.per_type) - set(REFERENCE_TYPES)):
        lines.append(_row(name, report.per_type[name]))
    lines.append(_row("= all types", report.overall))
    return "\n".join(lines)


def time_per_turn_us(extractor: OfflineExtractor, rounds: int) -> tuple[float, float]:
    """Mean µs per turn and mean characters per turn over ``rounds`` passes."""
    events = as_events(load_dataset())
    extractor.extract(events)  # warm the lazily compiled vocabulary
    start = time.perf_counter()
    for _ in range(rounds):
        extractor.extract(events)
    elapsed = time.perf_counter() - start
    chars = sum(len(e.content) for e in events) / len(events)
    return elapsed / (rounds * len(events)) * 1e6, chars


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.extraction")
    parser.add_argument("--rounds", type=int, default=200, help="timing passes over the set")
    parser.add_argument("--verbose", action="store_true", help="list misses and extras")
    args = parser.parse_args(argv)

    turns = load_dataset()
    extractor = OfflineExtractor()
    report = score(extractor, turns)
    print(f"offline extractor on {len(turns)} labelled turns")
    print(render(report))
    if args.verbose:
        for turn_id, type_name, name in report.misses:
            print(f"miss   {turn_id} {type_name}: {name}")
        for turn_id, type_name, name in report.extras:
            print(f"extra  {turn_id} {type_name}: {name}")
    us, chars = time_per_turn_us(extractor, args.rounds)
    print(f"\nspeed: {us:.1f} µs per turn (mean {chars:.0f} chars), {1e6 / us:,.0f} turns/s")
    ref, overall = report.reference, report.overall
    print(
        f"RESULT extraction turns={len(turns)} precision={ref.precision:.3f} "
        f"recall={ref.recall:.3f} all_precision={overall.precision:.3f} "
        f"all_recall={overall.recall:.3f} us_per_turn={us:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
