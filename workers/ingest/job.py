"""The ingest job's allow-listed entry point: the function name an ingest job carries.

Producers enqueue ``workers.ingest.job.ingest_turn(payload)`` (``INGEST_FUNCTION``); the
batching worker (``workers/ingest/batching.py``) performs such jobs itself, with the
pipeline it was built with, and refuses any other function name. This body only runs
when a stock RQ worker picks the job up, which cannot ingest (it has no pipeline).
"""

from __future__ import annotations

from typing import Any

from turngraph.schemas.errors import ConfigurationError


def ingest_turn(payload: dict[str, Any]) -> dict[str, int]:
    """Ingest one TurnEvent (a JSON-mode dict): run by ``turngraph worker ingest`` only."""
    del payload
    raise ConfigurationError("ingest jobs run in `turngraph worker ingest`, not a stock RQ worker")
