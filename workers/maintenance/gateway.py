"""The maintenance gateway: on-demand requests from clients become maintenance jobs.

Producers never import RQ (and never name a function to run), so a client pushes a
:class:`~schemas.distill.DistillRequest` on a Redis list; this loop, run in the
``maintenance`` process beside its RQ worker, validates it and enqueues the one job
function that answers requests (``answer_request_job``) on the maintenance queue. The
job pushes the reply on the request's reply key. Popping, checking and replying are
``producers/request_reply.py``'s, as for recall: a request past its deadline is dropped
(counted); a malformed one gets a typed error reply when it names a reply key.
"""

from __future__ import annotations

import threading

import redis
from rq import Queue

from turngraph.producers.request_reply import POP_TIMEOUT_S, RequestServer, is_reply_key
from turngraph.schemas.defaults import DISTILL_REPLY_TTL_S, FAILURE_TTL_S
from turngraph.schemas.distill import DistillRequest, DistillResponse
from turngraph.schemas.keys import DISTILL_REPLY_PREFIX
from turngraph.workers.maintenance import jobs


class DistillGateway:
    def __init__(self, conn: redis.Redis, queue: Queue, requests_key: str) -> None:
        self._queue = queue
        self._requests_key = requests_key
        self._server = RequestServer(
            conn, DistillRequest, DistillResponse, reply_ttl_s=DISTILL_REPLY_TTL_S
        )
        self.counters = self._server.counters
        self._stop = threading.Event()

    def handle(self, raw: bytes) -> bool:
        """One raw request; True when a job was enqueued for it."""
        request, _ = self._server.accept(
            raw, lambda reply_to: is_reply_key(reply_to, DISTILL_REPLY_PREFIX)
        )
        if request is None:
            return False
        self._queue.enqueue(
            jobs.answer_request_job,
            request.model_dump(mode="json"),
            job_id=f"distill-{request.request_id}",
            description=f"answer_request({request.op.value}, {request.request_id})",
            job_timeout=max(10, request.deadline_ms // 1000 + 5),
            result_ttl=0,
            failure_ttl=FAILURE_TTL_S,
        )
        self.counters.answered += 1
        return True

    def serve_once(self, timeout_s: float = POP_TIMEOUT_S) -> bool:
        popped = self._server.pop([self._requests_key], timeout_s)
        return popped is not None and self.handle(popped[1])

    def run(self) -> None:
        self._server.run(self.serve_once, self._stop)

    def stop(self) -> None:
        self._stop.set()
