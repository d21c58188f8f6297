"""The maintenance queue's worker: a stoppable RQ worker holding the distiller its jobs
use (``context.bound_distiller``: job arguments are JSON only)."""

from __future__ import annotations

from typing import Any

from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.rq_adapter import StoppableWorker

__all__ = ["MaintenanceWorker"]


class MaintenanceWorker(StoppableWorker):
    """Runs maintenance jobs with ``distiller`` (see ``context.bound_distiller``)."""

    def __init__(self, *args: Any, distiller: Distiller, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.distiller = distiller
