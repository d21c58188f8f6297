"""Reading a queued job defensively: a job RQ can run, or a typed refusal naming the field.

Anyone who can write Redis can push any id onto the ingest queue and write any job hash.
RQ parses a job hash field by field (dates, timeouts, counters, JSON data) and a bad field
raises out of its dequeue or ``Job.fetch_many``, outside any job's error handling: the
worker quits, is restarted, takes the same job again (a crash loop). So every job the
ingest worker dequeues is read here first; what cannot be read is refused with an
:class:`EnvelopeError` that names the field (never its value: it may be chat text), and is
dead-lettered while the other jobs proceed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping

from rq.job import Job, JobStatus
from rq.utils import parse_timeout, str_to_date

from turngraph.schemas.errors import InvalidPayloadError
from turngraph.workers.trusted_jobs import ALLOWED_FUNCTIONS

__all__ = [
    "FIELD_PARSERS", "FOREIGN_FIELDS", "JOB_ID", "EnvelopeError", "check_fields", "check_job_data",
    "check_job_id", "check_origin",
]  # fmt: skip

JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""Ids we write (RQ's own pattern, bounded); anything else on the queue was forged."""


class EnvelopeError(InvalidPayloadError):
    """A queued job that cannot be read; ``field`` names what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def _date(raw: bytes) -> object:
    return str_to_date(raw)


def _int(raw: bytes) -> object:
    return int(raw)


def _json_list(raw: bytes) -> object:
    value = json.loads(raw)
    if not isinstance(value, list):
        raise ValueError("not a list")
    return value


def _intervals(raw: bytes) -> object:
    value = _json_list(raw)
    assert isinstance(value, list)
    if not all(type(v) is int and 0 <= v <= 10**7 for v in value):
        raise ValueError("not a list of seconds")
    return value


def _ids(raw: bytes) -> object:
    value = _json_list(raw)
    assert isinstance(value, list)
    if not all(isinstance(v, str) for v in value):
        raise ValueError("not a list of job ids")
    return value


def _timeout(raw: bytes) -> object:
    value = parse_timeout(raw.decode())
    if value is None or value <= 0:
        raise ValueError("not a positive timeout")
    return value


def _status(raw: bytes) -> object:
    return JobStatus(raw.decode())


FIELD_PARSERS: Mapping[str, Callable[[bytes], object]] = {
    "status": _status,
    "created_at": _date,
    "enqueued_at": _date,
    "started_at": _date,
    "ended_at": _date,
    "last_heartbeat": _date,
    "timeout": _timeout,
    "result_ttl": _int,
    "failure_ttl": _int,
    "ttl": _int,
    "retries_left": _int,
    "number_of_retries": _int,
    "retry_intervals": _intervals,
    "repeats_left": _int,
    "repeat_intervals": _intervals,
    "dependency_ids": _ids,
    "allow_dependency_failures": _int,
    "enqueue_at_front": _int,
    "enqueue_at_front_on_retry": _int,
    "success_callback_timeout": _int,
    "failure_callback_timeout": _int,
    "stopped_callback_timeout": _int,
}
"""Every job hash field RQ's ``Job.restore`` parses, with a parser that fails where it does."""

FOREIGN_FIELDS = ("success_callback_name", "failure_callback_name", "stopped_callback_name")
"""Our jobs carry no callbacks: a job hash naming one was not written by us."""


def check_job_id(job_id: str) -> None:
    if not JOB_ID.fullmatch(job_id):
        raise EnvelopeError("id", "not [A-Za-z0-9_-]{1,128}")


def check_fields(raw: Mapping[bytes, bytes] | None) -> None:
    """Every field RQ parses is readable the way RQ later uses it (RQ's own ``restore``
    accepts some values its ``save`` then fails on, such as a number as
    ``dependency_ids``), and no callback is named."""
    if not raw:
        raise EnvelopeError("job", "no job hash")
    fields = {key.decode("utf-8", "replace"): value for key, value in raw.items()}
    if not fields.get("data"):
        raise EnvelopeError("data", "missing")
    for name, parse in FIELD_PARSERS.items():
        value = fields.get(name)
        if value:
            try:
                parse(value)
            except Exception:
                raise EnvelopeError(name, "unreadable") from None
    for name in FOREIGN_FIELDS:
        if fields.get(name):
            raise EnvelopeError(name, "callbacks are not allowed")


def check_origin(job: Job, queue_name: str) -> None:
    """RQ files a job's registries under its ``origin``: it must be the queue it was on."""
    if job.origin != queue_name:
        raise EnvelopeError("origin", "not the queue the job was on")


def check_job_data(job: Job) -> None:
    """The job's data decodes to an allow-listed function called with one list (the
    batch's turns)."""
    try:
        function, instance, args, kwargs = job.func_name, job.instance, job.args, job.kwargs
    except Exception:
        raise EnvelopeError("data", "not JSON job data") from None
    if function not in ALLOWED_FUNCTIONS:
        raise EnvelopeError("data.function", "not on the allow-list")
    if instance is not None or kwargs or len(args) != 1 or not isinstance(args[0], list):
        raise EnvelopeError("data.args", "expected exactly one list of TurnEvent objects")
