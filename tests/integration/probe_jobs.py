"""Tiny RQ job functions the integration tests point the bounded queue at."""

from __future__ import annotations

from typing import Any

from turngraph.schemas.turn_event import TurnEvent

SEEN_KEY = "test:seen"
"""List the probe job appends each executed event id to."""


def record_turn(payload: dict[str, Any]) -> str:
    """Validate the payload like the ingest job does and record its event id."""
    from rq import get_current_job

    event = TurnEvent.model_validate(payload)
    job = get_current_job()
    assert job is not None
    job.connection.rpush(SEEN_KEY, event.event_id)
    return event.event_id
