"""Extractor quality on the labelled turns: ``python -m bench.extraction``.

Prints per-type precision and recall (reference types first) on both halves of the
labelled turns (see :func:`bench.extraction_scoring.split_of`): the *tune* half, which
the rules may be fitted to, and the *score* half, whose figures the RESULT line quotes;
then the offline extractor's time per turn. Ends with one line
``RESULT extraction key=value …`` (score half; ``tune_`` keys for the tune half). The
people, places, organisations and events of ordinary conversation are scored apart, on
``tests/data/everyday_turns.jsonl`` (its own halves; ``everyday_`` keys).
With ``--llm`` it scores the LLM extractor on the configured endpoint instead
(``TURNGRAPH_LLM_BASE_URL`` / ``TURNGRAPH_LLM_API_KEY`` / ``TURNGRAPH_LLM_MODEL``) and
reports calls and tokens per turn.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.extraction_scoring import (
    EVERYDAY_PATH,
    EVERYDAY_TYPES,
    REFERENCE_TYPES,
    SCORE,
    TUNE,
    UNFITTED_PATH,
    LabelledTurn,
    Report,
    TypeScore,
    as_events,
    load_dataset,
    score,
)
from turngraph.settings import Settings
from turngraph.workers.extraction.offline import OfflineExtractor


def _cells(s: TypeScore) -> str:
    return f"{s.tp:>5}{s.fp:>4}{s.fn:>4}{s.precision:>7.3f}{s.recall:>7.3f}"


def render(tune: Report, held: Report) -> str:
    """One row per type: the tune half, then the score half."""
    head = f"{'tp':>5}{'fp':>4}{'fn':>4}{'P':>7}{'R':>7}"
    lines = [
        f"{'':<16}{'tune half':^27} | {'score half':^27}",
        f"{'type':<16}{head} | {head}",
    ]

    def row(name: str, pick: str | None = None) -> None:
        if pick == "reference":
            a, b = tune.reference, held.reference
        elif pick == "directives":
            a, b = tune.directives, held.directives
        elif pick == "all":
            a, b = tune.overall, held.overall
        else:
            a = tune.per_type.get(name, TypeScore())
            b = held.per_type.get(name, TypeScore())
        lines.append(f"{name:<16}{_cells(a)} | {_cells(b)}")

    for name in REFERENCE_TYPES:
        row(name)
    row("= reference", "reference")
    row("= directives", "directives")
    for name in sorted((set(tune.per_type) | set(held.per_type)) - set(REFERENCE_TYPES)):
        row(name)
    row("= all types", "all")
    return "\n".join(lines)


def _figures(report: Report, prefix: str = "") -> str:
    ref, directives, overall = report.reference, report.directives, report.overall
    return (
        f"{prefix}precision={ref.precision:.3f} {prefix}recall={ref.recall:.3f} "
        f"{prefix}directive_recall={directives.recall:.3f} "
        f"{prefix}all_precision={overall.precision:.3f} {prefix}all_recall={overall.recall:.3f}"
    )


def render_everyday(tune: Report, held: Report) -> str:
    """The everyday types only, tune half then score half."""
    head = f"{'tp':>5}{'fp':>4}{'fn':>4}{'P':>7}{'R':>7}"
    lines = [f"{'type':<16}{head} | {head}"]
    for name in EVERYDAY_TYPES:
        a = tune.per_type.get(name, TypeScore())
        b = held.per_type.get(name, TypeScore())
        lines.append(f"{name:<16}{_cells(a)} | {_cells(b)}")
    lines.append(f"{'= everyday':<16}{_cells(tune.everyday)} | {_cells(held.everyday)}")
    return "\n".join(lines)


def _halves(turns: list[LabelledTurn]) -> str:
    return f"{len(load_dataset(split=TUNE))} tune / {len(load_dataset(split=SCORE))} score"


def time_per_turn_us(extractor: OfflineExtractor, rounds: int) -> tuple[float, float, float]:
    """Median and best CPU µs per turn over ``rounds`` passes, and the mean characters per
    turn. CPU time of this process (``time.process_time``), not wall time: the extractor
    is single-threaded and pure, and wall time on a shared machine measures the neighbours."""
    events = as_events(load_dataset())
    extractor.extract(events)  # warm the lazily built vocabulary
    per_pass = []
    for _ in range(rounds):
        start = time.process_time()
        extractor.extract(events)
        per_pass.append((time.process_time() - start) / len(events) * 1e6)
    chars = sum(len(e.content) for e in events) / len(events)
    return statistics.median(per_pass), min(per_pass), chars


def _misses(report: Report, half: str) -> None:
    for turn_id, type_name, name in report.misses:
        print(f"{half} miss   {turn_id} {type_name}: {name}")
    for turn_id, type_name, name in report.extras:
        print(f"{half} extra  {turn_id} {type_name}: {name}")


def run_llm(verbose: bool) -> int:
    import openai

    from turngraph.workers.extraction.llm import LLMExtractor

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
    # no fallback: the figures are the model's own (fallbacks would hide its failures)
    extractor = LLMExtractor(
        client,
        model=settings.llm_model,
        max_output_tokens=settings.llm_max_output_tokens,
        max_tokens_parameter=settings.llm_max_tokens_parameter,
        temperature=settings.llm_temperature,
    )
    start = time.perf_counter()
    tune = score(extractor, load_dataset(split=TUNE))
    held = score(extractor, load_dataset(split=SCORE))
    elapsed = time.perf_counter() - start
    client.close()
    print(f"LLM extractor ({settings.llm_model}) on {len(turns)} labelled turns ({_halves(turns)})")
    print(render(tune, held))
    if verbose:
        _misses(tune, TUNE)
        _misses(held, SCORE)
    stats, per_turn = extractor.stats.snapshot(), extractor.stats.per_turn()
    print(f"\n{stats}")
    print(
        f"RESULT extraction turns={len(turns)} {_figures(held)} "
        f"calls_per_turn={per_turn['calls_per_turn']:.3f} "
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
    tune = score(extractor, load_dataset(split=TUNE))
    held = score(extractor, load_dataset(split=SCORE))
    print(f"offline extractor on {len(turns)} labelled turns ({_halves(turns)})")
    print(render(tune, held))
    unfitted = score(extractor, load_dataset(UNFITTED_PATH, split=SCORE))
    print(f"score half, {UNFITTED_PATH.name} only: {_figures(unfitted)}")
    if args.verbose:
        _misses(tune, TUNE)
        _misses(held, SCORE)
    everyday = load_dataset(EVERYDAY_PATH)
    day_tune = score(extractor, load_dataset(EVERYDAY_PATH, split=TUNE))
    day_held = score(extractor, load_dataset(EVERYDAY_PATH, split=SCORE))
    print(f"\n{EVERYDAY_PATH.name}: {len(everyday)} turns of ordinary conversation")
    print(render_everyday(day_tune, day_held))
    if args.verbose:
        _misses(day_tune, TUNE)
        _misses(day_held, SCORE)
    us, best_us, chars = time_per_turn_us(extractor, args.rounds)
    print(
        f"\nspeed (CPU time): median {us:.1f} µs per turn, best pass {best_us:.1f} µs "
        f"(mean {chars:.0f} chars per turn), {1e6 / us:,.0f} turns/s"
    )
    print(
        f"RESULT extraction turns={len(turns)} {_figures(held)} {_figures(tune, 'tune_')} "
        f"everyday_precision={day_held.everyday.precision:.3f} "
        f"everyday_recall={day_held.everyday.recall:.3f} "
        f"tune_everyday_precision={day_tune.everyday.precision:.3f} "
        f"tune_everyday_recall={day_tune.everyday.recall:.3f} "
        f"us_per_turn={us:.1f} best_us_per_turn={best_us:.1f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
