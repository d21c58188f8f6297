"""On-demand distillation asks (``DistillClient`` pushes them on the asks inbox,
``keys.DISTILL_REQUESTS``), admitted into RQ jobs the way turns are, beside the maintenance
worker: each checked as the request/reply exchange's serving end does (counted in
:attr:`AskAdmission.served`), one ``answer_request_job`` per ask, which replies."""

from __future__ import annotations

from collections.abc import Sequence

import redis
from rq import Queue

from turngraph.producers.request_reply import is_reply_key
from turngraph.producers.request_server import RequestServer
from turngraph.schemas.defaults import DISTILL_REPLY_TTL_S, FAILURE_TTL_S
from turngraph.schemas.distill import DistillRequest, DistillResponse
from turngraph.schemas.keys import ADMISSION_LIST_TEMPLATE, DISTILL_REPLY_PREFIX, DISTILL_REQUESTS
from turngraph.workers.ingest.admission import OPERATOR, WAKE_TIMEOUT_S, Admission, Source
from turngraph.workers.maintenance.jobs import answer_request_job

__all__ = ["ASKS_PENDING", "AskAdmission", "reply_key"]

ASKS_PENDING = ADMISSION_LIST_TEMPLATE.format(source="asks:distill")
"""The asks' admission list: its source holds a ``:``, which no tenant's name (and so no
tenant's admission list, ``admission.tenant_source``) can, and is not ``operator:``'s."""


class AskAdmission(Admission):
    """Admits the asks inbox into the maintenance ``queue``, one job per ask."""

    def __init__(self, conn: redis.Redis, queue: Queue) -> None:
        super().__init__(conn, queue)
        self._asks = Source(OPERATOR, DISTILL_REQUESTS, "", "", ASKS_PENDING)
        self._server = RequestServer(
            conn, DistillRequest, DistillResponse, reply_ttl_s=DISTILL_REPLY_TTL_S
        )
        self.served = self._server.counters

    def sources(self) -> list[Source]:
        return [self._asks]

    def room(self) -> int:
        """Always: an ask's bound is its client's deadline, not the queue's depth."""
        return 1

    def queue_bound(self) -> int:
        """None, for the same reason."""
        return 0

    def batches_per_take(self) -> int:
        """One: an ask list is admitted by :meth:`admit_entries`, ask by ask."""
        return 1

    def wait_idle(self) -> None:
        """Move the next ask into the admission list as it comes (atomically)."""
        self._redis.blmove(DISTILL_REQUESTS, ASKS_PENDING, int(WAKE_TIMEOUT_S), "LEFT", "RIGHT")

    def admit_entries(self, source: Source, entries: Sequence[bytes], epoch: int = 0) -> None:
        """One job per valid ask (no retry, no result kept, no chat text in the
        description), enqueued in one MULTI with the admission list's trim (not a delete:
        another admitter's wait may have moved an ask in since)."""
        accepted = (self._server.accept(raw, reply_key)[0] for raw in entries)
        asks = [
            Queue.prepare_data(
                answer_request_job,
                args=(ask.model_dump(mode="json"),),
                job_id=f"distill-{ask.request_id}",
                description=f"answer_request({ask.op.value}, {ask.request_id})",
                timeout=max(10, ask.deadline_ms // 1000 + 5),
                result_ttl=0,
                failure_ttl=FAILURE_TTL_S,
            )
            for ask in accepted
            if ask is not None
        ]
        with self._redis.pipeline(transaction=True) as pipe:
            if asks:
                self._queue.enqueue_many(asks, pipeline=pipe)
            pipe.ltrim(source.pending, len(entries), -1)
            pipe.execute()
        self.served.answered += len(asks)


def reply_key(reply_to: object) -> bool:
    return is_reply_key(reply_to, DISTILL_REPLY_PREFIX)
