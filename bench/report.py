"""Shared benchmark output: percentiles, a plain-text table, the final ``RESULT`` line."""

from __future__ import annotations

import math
from collections.abc import Sequence


def percentile(values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (``pct`` in 0..100); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Left-aligned first column, right-aligned numbers; floats with 3 decimals."""
    cells = [[_cell(v) for v in row] for row in rows]
    widths = [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(headers)]

    def line(values: Sequence[str]) -> str:
        first, *rest = values
        parts = [first.ljust(widths[0])] + [
            v.rjust(w) for v, w in zip(rest, widths[1:], strict=True)
        ]
        return "  ".join(parts)

    out = [line(list(headers)), line(["-" * w for w in widths])]
    out += [line(r) for r in cells]
    return "\n".join(out)


def result_line(name: str, **values: float | int | str) -> str:
    """``RESULT name k=v …``: numbers without units (the unit goes in the key)."""
    parts = [f"{k}={_cell(v)}" for k, v in values.items()]
    return " ".join(["RESULT", name, *parts])


def _cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)
