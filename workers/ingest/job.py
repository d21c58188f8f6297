"""The ingest job's allow-listed entry point: one RQ job per batch of turns.

Admission (``workers/ingest/admission.py``) enqueues ``ingest_batch(batch)`` with RQ's
public ``Queue.enqueue_many``, ``batch`` a reference to the turns it stored under the job's
id (``workers/batch_store.py``); a list of TurnEvent JSON dicts (a forget's or a
requeued dead letter's batch) is run as it is. The job runs its turns through the ingest
worker performing it (``workers/ingest/batching.py``, reached with
``performing_worker``), as maintenance jobs use their worker's distiller. A stock RQ
worker has no pipeline: the job fails with a :class:`ConfigurationError` saying so.
"""

from __future__ import annotations

from typing import Any

from rq import Queue, Retry, get_current_job

from turngraph.schemas.defaults import (
    FAILURE_TTL_S,
    INGEST_FUNCTION,
    RESULT_TTL_S,
    RETRIES,
    RETRY_INTERVALS_S,
)
from turngraph.schemas.errors import ConfigurationError
from turngraph.workers.rq_adapter import performing_worker
from turngraph.workers.tombstones import ADMITTED_EPOCH, admitted_epoch

__all__ = ["ADMITTED_EPOCH", "INGEST_FUNCTION", "admitted_epoch", "batch_job", "ingest_batch"]


def batch_job(
    batch: list[dict[str, Any]] | dict[str, Any],
    timeout_s: int,
    job_id: str | None = None,
    *,
    admitted_epoch: int = 0,
) -> Any:
    """RQ's ``Queue.prepare_data`` of one batch job: our function, the batch (its stored
    turns' reference, or the turns) as its one argument, the forget epoch they were
    admitted under in its meta, a description without chat text, the one retry policy."""
    turns = len(batch) if isinstance(batch, list) else batch["turns"]
    return Queue.prepare_data(
        INGEST_FUNCTION,
        job_id=job_id,
        args=(batch,),
        meta={ADMITTED_EPOCH: admitted_epoch},
        description=f"ingest_batch({turns} turns)",
        timeout=timeout_s,
        result_ttl=RESULT_TTL_S,
        failure_ttl=FAILURE_TTL_S,
        retry=Retry(max=RETRIES, interval=list(RETRY_INTERVALS_S)),
    )


def ingest_batch(batch: list[dict[str, Any]] | dict[str, Any]) -> dict[str, int]:
    """Ingest a batch of TurnEvents (stored, or JSON-mode dicts): run by ``turngraph worker
    ingest``."""
    job = get_current_job()
    run = getattr(performing_worker(), "ingest", None)
    if run is None or job is None:
        raise ConfigurationError(
            "ingest jobs run in `turngraph worker ingest`, not a stock RQ worker"
        )
    counts: dict[str, int] = run(job, batch)
    return counts
