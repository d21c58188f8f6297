"""RQ job functions. Arguments are JSON; the pipeline comes from ``workers.runtime``."""

from __future__ import annotations

from typing import Any

from workers import runtime


def ingest_turn(payload: dict[str, Any]) -> dict[str, int]:
    """Ingest one TurnEvent (a JSON-mode dict). Idempotent: re-delivery changes nothing."""
    return runtime.pipeline().ingest_payloads([payload]).as_counts()
