"""Admission of distillation asks (the maintenance worker's side of the one path): a
foreign reply key touches no key, an invalid ask gets a typed error, a late one is
dropped, each counted; a valid one becomes one RQ job that RQ's ``Job.fetch`` reads."""

from __future__ import annotations

import json
import time

import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from turngraph.schemas.distill import DistillOp, DistillRequest, DistillResponse
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.keys import DISTILL_REPLY_PREFIX, DISTILL_REQUESTS
from turngraph.workers.maintenance.asks import ASKS_PENDING, AskAdmission

pytestmark = pytest.mark.integration


def _admission(conn: redis.Redis) -> tuple[AskAdmission, Queue]:
    queue = Queue("turngraph-maintenance", connection=conn, serializer=JSONSerializer)
    return AskAdmission(conn, queue), queue


def _ask(request_id: str, **fields: object) -> DistillRequest:
    return DistillRequest(
        request_id=request_id,
        reply_to=DISTILL_REPLY_PREFIX + request_id,
        op=DistillOp.RECAP,
        session_id="s_asks",
        sent_at_ms=int(time.time() * 1000),
        **fields,  # type: ignore[arg-type]
    )


def test_hostile_invalid_and_late_asks_are_counted_and_only_valid_ones_become_jobs(
    redis_conn: redis.Redis,
) -> None:
    admission, queue = _admission(redis_conn)
    foreign = _ask("foreign").model_copy(update={"reply_to": "rq:queue:turngraph-ingest"})
    invalid = {**json.loads(_ask("invalid").model_dump_json()), "op": "drop_everything"}
    late = _ask("late", deadline_ms=1_000).model_copy(update={"sent_at_ms": 1})
    valid = _ask("valid", deadline_ms=20_000)
    redis_conn.rpush(
        DISTILL_REQUESTS,
        foreign.model_dump_json(),
        json.dumps(invalid),
        b"\xff not json",
        late.model_dump_json(),
        valid.model_dump_json(),
    )
    assert admission.admit_all() == 5
    served = admission.served
    assert (served.refused_reply_to, served.malformed, served.skipped_late) == (1, 2, 1)
    assert served.answered == 1
    assert not redis_conn.exists("rq:queue:turngraph-ingest")
    reply = DistillResponse.model_validate_json(
        redis_conn.lpop(DISTILL_REPLY_PREFIX + "invalid")  # type: ignore[arg-type]
    )
    assert reply.error_code == ErrorCode.INVALID_REQUEST
    assert "op" in reply.user_message and "drop_everything" not in reply.user_message
    assert not redis_conn.exists(DISTILL_REPLY_PREFIX + "late", DISTILL_REPLY_PREFIX + "foreign")
    assert queue.job_ids == ["distill-valid"]
    job = Job.fetch("distill-valid", connection=redis_conn, serializer=JSONSerializer)
    assert job.func_name == "turngraph.workers.maintenance.jobs.answer_request_job"
    assert list(job.args) == [valid.model_dump(mode="json")]
    assert "s_asks" not in (job.description or "") and job.timeout == 25
    assert not redis_conn.exists(ASKS_PENDING, DISTILL_REQUESTS)


def test_an_ask_moved_in_by_the_idle_wait_is_admitted_and_one_arriving_late_is_kept(
    redis_conn: redis.Redis,
) -> None:
    admission, queue = _admission(redis_conn)
    redis_conn.rpush(DISTILL_REQUESTS, _ask("first").model_dump_json())
    admission.wait_idle()  # the ask is in the admission list, no longer in the inbox
    pending = ASKS_PENDING
    assert redis_conn.llen(pending) == 1 and not redis_conn.exists(DISTILL_REQUESTS)
    entries: list[bytes] = redis_conn.lrange(pending, 0, -1)  # type: ignore[assignment]
    # another maintenance worker's wait moves a second ask in while this one admits
    redis_conn.rpush(pending, _ask("second").model_dump_json())
    admission.admit_entries(admission.sources()[0], entries)
    assert queue.job_ids == ["distill-first"]
    assert redis_conn.llen(pending) == 1  # kept for the next pass, not deleted
    assert admission.admit_all() == 1
    assert queue.job_ids == ["distill-first", "distill-second"]
