"""RQ job functions. Arguments are JSON; the pipeline comes from ``workers.runtime``."""

from __future__ import annotations

from typing import Any

from rq import get_current_job

from schemas.errors import PermanentError
from workers import runtime


def ingest_turn(payload: dict[str, Any]) -> dict[str, int]:
    """Ingest one TurnEvent (a JSON-mode dict), plus any turns the batching worker claimed
    beside it (one transaction). Idempotent: re-delivery changes nothing.

    Transient errors propagate and RQ retries the job with back-off (the retry policy is
    written with the job, see ``producers/enqueue.lua``); a permanent error (a payload
    that does not validate) fails the job at once.
    """
    extras = runtime.take_batch_extras() or []
    try:
        return runtime.pipeline().ingest_payloads([payload, *extras]).as_counts()
    except PermanentError:
        job = get_current_job()
        if job is not None:
            job.retries_left = 0  # RQ reads this on the job it is performing
        raise
