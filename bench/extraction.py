"""Extractor quality on the labelled turns: ``python -m bench.extraction``.

Prints per-type precision and recall (reference types first) and the offline
extractor's time per turn, and ends with one line ``RESULT extraction key=value …``.
With ``--llm`` it scores the LLM extractor on the configured endpoint instead
(``TURNGRAPH_LLM_BASE_URL`` / ``TURNGRAPH_LLM_API_KEY`` / ``TURNGRAPH_LLM_MODEL``) and
reports calls and tokens per turn.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from turngraph.settings import Settings
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


def time_per_turn_us(extractor: OfflineExtractor, rounds: int) -> tuple[float, float, float]:
    """Median and best µs per turn over ``rounds`` passes (the median resists a busy
    machine), and the mean characters per turn."""
    events = as_events(load_dataset())
    extractor.extract(events)  # warm the lazily built vocabulary
    per_pass = []
    for _ in range(rounds):
        start = time.perf_counter()
        extractor.extract(events)
        per_pass.append((time.perf_counter() - start) / len(events) * 1e6)
    chars = sum(len(e.content) for e in events) / len(events)
    return statistics.median(per_pass), min(per_pass), chars


def _misses(report: Report) -> None:
    for turn_id, type_name, name in report.misses:
        print(f"miss   {turn_id} {type_name}: {name}")
    for turn_id, type_name, name in report.extras:
        print(f"extra  {turn_id} {type_name}: {name}")


def run_llm(verbose: bool) -> int:
    import openai

    from workers.extraction.llm import LLMExtractor

    settings = Settings()
    if not settings.llm_configured:
        print("no LLM configured: set TURNGRAPH_LLM_BASE_URL and/or TURNGRAPH_LLM_API_KEY")
        return 2
    key = settings.llm_api_key.get_secret_value() if settings.llm_api_key else "none"
    client = openai.OpenAI(
        base_url=settings.llm_base_url,
        api_key=key,
        timeout=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
    )
    turns = load_dataset()
    extractor = LLMExtractor(client, model=settings.llm_model)
    start = time.perf_counter()
    report = score(extractor, turns)
    elapsed = time.perf_counter() - start
    client.close()
    print(f"LLM extractor ({settings.llm_model}) on {len(turns)} labelled turns")
    print(render(report))
    if verbose:
        _misses(report)
    stats, per_turn = extractor.stats.snapshot(), extractor.stats.per_turn()
    print(f"\n{stats}")
    ref = report.reference
    print(
        f"RESULT extraction turns={len(turns)} precision={ref.precision:.3f} "
        f"recall={ref.recall:.3f} calls_per_turn={per_turn['calls_per_turn']:.3f} "
        f"prompt_tokens_per_turn={per_turn['prompt_tokens_per_turn']:.0f} "
        f"completion_tokens_per_turn={per_turn['completion_tokens_per_turn']:.0f} "
        f"dropped={stats['dropped']} ms_per_turn={elapsed / len(turns) * 1e3:.1f}"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.extraction")
    parser.add_argument("--rounds", type=int, default=200, help="timing passes over the set")
    parser.add_argument("--verbose", action="store_true", help="list misses and extras")
    parser.add_argument("--llm", action="store_true", help="score the configured LLM instead")
    args = parser.parse_args(argv)
    if args.llm:
        return run_llm(args.verbose)

    turns = load_dataset()
    extractor = OfflineExtractor()
    report = score(extractor, turns)
    print(f"offline extractor on {len(turns)} labelled turns")
    print(render(report))
    if args.verbose:
        _misses(report)
    us, best_us, chars = time_per_turn_us(extractor, args.rounds)
    print(
        f"\nspeed: median {us:.1f} µs per turn, best pass {best_us:.1f} µs "
        f"(mean {chars:.0f} chars per turn), {1e6 / us:,.0f} turns/s"
    )
    ref, overall = report.reference, report.overall
    print(
        f"RESULT extraction turns={len(turns)} precision={ref.precision:.3f} "
        f"recall={ref.recall:.3f} all_precision={overall.precision:.3f} "
        f"all_recall={overall.recall:.3f} us_per_turn={us:.1f} best_us_per_turn={best_us:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
