"""The empty worker: bench.ingest's same-run reference for one ingest worker.

The same process as ``turngraph worker ingest --burst`` (settings from the environment,
the inbox admitted into batch jobs, a stock RQ ``SimpleWorker`` running them, each job
reading its stored turns and validating them), with a pipeline that does nothing with
the turns: no redaction, extraction, embedding, graph write or markers. What a real
worker costs beyond it is the ingest path's own.

    python -m bench.ingest_empty_worker     # run by bench.ingest, with its environment
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import redis
from rq.job import Job
from rq.registry import FinishedJobRegistry
from rq.serializers import JSONSerializer

from turngraph.app import build_ingest_worker, ingest_burst
from turngraph.clients import build_clients
from turngraph.logs import configure_logging
from turngraph.schemas.defaults import INGEST_QUEUE
from turngraph.schemas.turn_event import TurnEvent
from turngraph.settings import Settings
from turngraph.workers.ingest.pipeline import IngestPipeline, IngestResult

__all__ = ["EmptyPipeline", "turns_done"]


class EmptyPipeline(IngestPipeline):
    """Takes a batch's validated turns and does nothing with them."""

    def __init__(self) -> None:  # no clients: nothing is written anywhere
        pass

    def ingest(
        self, events: Sequence[TurnEvent], admitted_epoch: int | None = None
    ) -> IngestResult:
        return IngestResult(turns=len(events), entities=0, facts=0, dropped=0, superseded=0)


def turns_done(conn: redis.Redis, queue_name: str = INGEST_QUEUE) -> int:
    """Turns the finished batch jobs of the ingest queue ran (their results' ``turns``)."""
    registry = FinishedJobRegistry(queue_name, connection=conn, serializer=JSONSerializer)
    jobs = Job.fetch_many(registry.get_job_ids(), connection=conn, serializer=JSONSerializer)
    done = 0
    for job in jobs:
        counts = job.return_value() if job is not None else None
        done += int(counts["turns"]) if isinstance(counts, dict) else 0
    return done


def main() -> int:
    settings = Settings()
    configure_logging(settings)
    clients = build_clients(settings)
    try:
        ingest_burst(clients, build_ingest_worker(clients, EmptyPipeline()))
    finally:
        clients.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
