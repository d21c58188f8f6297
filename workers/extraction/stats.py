"""Counters of LLM extraction: calls, re-asks, tokens, turns; read by metrics and benches."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field, fields


@dataclass
class ExtractionStats:
    """Cumulative, thread-safe counters of one extractor (one per worker process).

    ``calls`` counts completed requests (a request the openai client retried after a 429
    counts once); ``reasks`` those that re-sent an invalid answer with its errors.
    """

    turns: int = 0
    batches: int = 0
    calls: int = 0
    reasks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    invalid_answers: int = 0
    unanswered_turns: int = 0
    dropped: int = 0
    repaired: int = 0
    transient_failures: int = 0
    fallback_batches: int = 0
    """Batches extracted by the fallback (offline rules) because the LLM call failed."""
    fallback_turns: int = 0
    """Their turns: recorded by the pipeline for a later LLM pass."""
    mode_downgrades: int = 0
    """Times the server refused an output mode (json_schema, then json_object)."""
    truncated_answers: int = 0
    """Answers cut at the output limit (the batch fell back; fewer turns per call since)."""
    system_prompt_dropped: int = 0
    """Times the server was found not to read the system message (merged since)."""
    fallback_reasons: dict[str, int] = field(default_factory=dict, compare=False)
    """Fallback batches per reason (``endpoint_cooling_down``, ``budget_spent`` …)."""
    mirror: Callable[[dict[str, int]], None] | None = field(default=None, repr=False, compare=False)
    """Told of every increment (``SharedCounts``: the counters across processes)."""
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, **counts: int) -> None:
        with self._lock:
            for name, value in counts.items():
                setattr(self, name, getattr(self, name) + value)
        if self.mirror is not None:
            self.mirror(counts)

    def add_reason(self, reason: str) -> None:
        with self._lock:
            self.fallback_reasons[reason] = self.fallback_reasons.get(reason, 0) + 1
        if self.mirror is not None:
            self.mirror({f"fallback:{reason}": 1})

    def reasons(self) -> dict[str, int]:
        with self._lock:
            return dict(self.fallback_reasons)

    def snapshot(self) -> dict[str, int]:
        """The counters as plain numbers (for a metrics exporter or a RESULT line)."""
        with self._lock:
            return {
                f.name: getattr(self, f.name)
                for f in fields(self)
                if f.name not in ("_lock", "fallback_reasons", "mirror")
            }

    def per_turn(self) -> dict[str, float]:
        """Calls and tokens per extracted turn (0 before the first turn)."""
        snap = self.snapshot()
        turns = snap["turns"] or 1
        return {
            "calls_per_turn": snap["calls"] / turns if snap["turns"] else 0.0,
            "prompt_tokens_per_turn": snap["prompt_tokens"] / turns if snap["turns"] else 0.0,
            "completion_tokens_per_turn": (
                snap["completion_tokens"] / turns if snap["turns"] else 0.0
            ),
        }
