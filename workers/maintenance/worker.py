"""The maintenance queue's worker: a stoppable RQ worker that lends its distiller to each
job it performs, as the ingest worker binds its batch (job arguments are JSON only)."""

from __future__ import annotations

from typing import Any

from rq.job import Job
from rq.queue import Queue

from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.stoppable import StoppableWorker


class MaintenanceWorker(StoppableWorker):
    """Runs maintenance jobs with ``distiller`` (see ``context.bound_distiller``)."""

    def __init__(self, *args: Any, distiller: Distiller, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.distiller = distiller

    def perform_job(self, job: Job, queue: Queue) -> bool:
        job.distiller = self.distiller  # type: ignore[attr-defined]
        return super().perform_job(job, queue)
