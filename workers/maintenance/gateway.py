"""The maintenance gateway: on-demand requests from clients become maintenance jobs.

Producers never import RQ (and never name a function to run), so a client pushes a
:class:`~schemas.distill.DistillRequest` on a Redis list; this loop, run in the
``maintenance`` process beside its RQ worker, validates it and enqueues the one job
function that answers requests (``answer_request_job``) on the maintenance queue. The
job pushes the reply on the request's reply key. A request past its deadline is dropped
(counted); a malformed one gets a typed error reply when it names a reply key.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
import structlog
from rq import Queue

from turngraph.schemas.defaults import DISTILL_REPLY_TTL_S, FAILURE_TTL_S
from turngraph.schemas.distill import DistillResponse
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.keys import DISTILL_REPLY_PREFIX
from turngraph.workers.maintenance import answers, jobs

log = structlog.get_logger(__name__)

POP_TIMEOUT_S = 1.0


@dataclass
class GatewayCounters:
    enqueued: int = 0
    malformed: int = 0
    skipped_late: int = 0


class DistillGateway:
    def __init__(self, conn: redis.Redis, queue: Queue, requests_key: str) -> None:
        self._redis = conn
        self._queue = queue
        self._requests_key = requests_key
        self.counters = GatewayCounters()
        self._stop = threading.Event()

    def handle(self, raw: bytes) -> bool:
        """One raw request; True when a job was enqueued for it."""
        request, reply_to, request_id = answers.parse(raw)
        if request is not None and not request.reply_to.startswith(DISTILL_REPLY_PREFIX):
            request = None  # replies go to reply keys only, never to another key of Redis
        if request is None:
            self.counters.malformed += 1
            log.warning("distill_request_malformed")
            if reply_to and reply_to.startswith(DISTILL_REPLY_PREFIX):
                answers.reply(
                    self._redis,
                    reply_to,
                    DistillResponse.failure(
                        request_id or "unknown",
                        ErrorCode.INVALID_REQUEST,
                        "invalid distill request",
                        "see schemas/distill.py for the fields of each op",
                    ),
                    DISTILL_REPLY_TTL_S,
                )
            return False
        if request.sent_at_ms is not None and time.time() * 1000 > (
            request.sent_at_ms + request.deadline_ms
        ):
            self.counters.skipped_late += 1
            log.info("distill_request_late", request_id=request.request_id)
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
        self.counters.enqueued += 1
        return True

    def serve_once(self, timeout_s: float = POP_TIMEOUT_S) -> bool:
        popped: Any = self._redis.blpop([self._requests_key], timeout=timeout_s)
        if popped is None:
            return False
        return self.handle(popped[1])

    def run(self) -> None:
        while not self._stop.is_set():
            try:
                self.serve_once()
            except redis.RedisError as exc:
                log.warning("distill_gateway_redis_error", error=type(exc).__name__)
                self._stop.wait(0.5)

    def stop(self) -> None:
        self._stop.set()
