"""``python -m bench.distill`` prints the figures the distilled-memory issue asks for: run
on a few of the labelled conversations and a short recap session (the full bench takes
minutes), through the real graph, Redis and the local OpenAI-compatible server."""

from __future__ import annotations

import pytest

from bench.distill import load, measure, report
from turngraph.clients import Clients

pytestmark = pytest.mark.integration

FIGURES = (
    "summaries_per_100_turns",
    "offline_summary_ms_per_turn",
    "llm_calls_per_summary",
    "llm_prompt_tokens_per_summary",
    "recap_1000_turns_ms",
    "recap_tokens",
    "decision_coverage_offline_score",
    "decision_coverage_offline_tune",
    "decision_coverage_llm_score",
)


def test_bench_prints_every_listed_figure(
    clients: Clients, capsys: pytest.CaptureFixture[str]
) -> None:
    conversations = load()
    sample = [next(c for c in conversations if c["split"] == split) for split in ("tune", "score")]
    report(measure(clients, sample, recap_turns=120))
    out = capsys.readouterr().out
    last = out.strip().splitlines()[-1]
    assert last.startswith("RESULT distill "), out
    values = dict(part.split("=", 1) for part in last.split()[2:])
    for name in FIGURES:
        assert name in values, name
    assert float(values["summaries_per_100_turns"]) > 0
    assert float(values["offline_summary_ms_per_turn"]) > 0
    assert float(values["llm_calls_per_summary"]) == 1.0  # every answer valid: no re-ask
    assert float(values["llm_prompt_tokens_per_summary"]) > 0
    assert float(values["recap_1000_turns_ms"]) > 0
    assert 0 < int(values["recap_tokens"]) <= 1_000
    for split in ("score", "tune"):
        assert 0.0 <= float(values[f"decision_coverage_offline_{split}"]) <= 1.0
    assert values["decision_coverage_llm_score"] == "n/a"  # no real model configured
    assert "precision" in out and "LLM calls per summary" in out
