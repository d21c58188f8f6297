"""RQ job functions. Arguments are JSON; the pipeline comes from ``workers.runtime``."""

from __future__ import annotations

from typing import Any

from workers import runtime


def ingest_turn(payload: dict[str, Any]) -> dict[str, int]:
    """Ingest one TurnEvent (a JSON-mode dict), plus any turns the batching worker claimed
    beside it (one transaction). Idempotent: re-delivery changes nothing."""
    extras = runtime.take_batch_extras() or []
    return runtime.pipeline().ingest_payloads([payload, *extras]).as_counts()
