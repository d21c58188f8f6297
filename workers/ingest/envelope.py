"""Reading a queued job defensively: a job RQ can run, or a typed refusal naming the field.

Anyone who can write Redis can write any job hash. A field RQ cannot restore raises out
of its dequeue (a crash loop): the ingest worker (``workers/rq_adapter.py``) refuses such
a job as ``job``/``unreadable``; a job RQ did restore is checked here for what RQ would
fail on later. A refusal is an :class:`EnvelopeError` naming the field, never its value;
the job is dead-lettered while the others proceed.
"""

from __future__ import annotations

import re
from typing import Any

from rq.job import Job

from turngraph.schemas.errors import InvalidPayloadError
from turngraph.workers.batch_store import is_reference
from turngraph.workers.rq_adapter import AllowListedJob
from turngraph.workers.trusted_jobs import ALLOWED_FUNCTIONS

__all__ = ["JOB_ID", "EnvelopeError", "check_job", "check_job_id"]

JOB_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""Ids we write (RQ's own pattern, bounded); anything else on the queue was forged."""


class EnvelopeError(InvalidPayloadError):
    """A queued job that cannot be read; ``field`` names what is wrong."""

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


def check_job_id(job_id: str) -> None:
    if not JOB_ID.fullmatch(job_id):
        raise EnvelopeError("id", "not [A-Za-z0-9_-]{1,128}")


def _seconds(value: Any) -> bool:
    return isinstance(value, list) and all(type(v) is int and 0 <= v <= 10**7 for v in value)


def check_job(job: Job, queue_name: str) -> None:
    """The job RQ restored: its fields are usable the way RQ later uses them (RQ's
    ``restore`` accepts some values its ``save`` then fails on), it names no callback, it
    was on the queue it names as its ``origin``, and its data calls an allow-listed
    function with one argument: the batch's turns, or the reference to its stored turns."""
    if job.timeout is not None and not job.timeout > 0:
        raise EnvelopeError("timeout", "not a positive timeout")
    for field in ("retry_intervals", "repeat_intervals"):
        if getattr(job, field, None) is not None and not _seconds(getattr(job, field)):
            raise EnvelopeError(field, "not a list of seconds")
    if isinstance(job, AllowListedJob) and (problem := job.stored_problem()) is not None:
        raise EnvelopeError(*problem)
    if job.origin != queue_name:
        raise EnvelopeError("origin", "not the queue the job was on")
    try:
        function, instance, args, kwargs = job.func_name, job.instance, job.args, job.kwargs
    except Exception:
        raise EnvelopeError("data", "not JSON job data") from None
    if function not in ALLOWED_FUNCTIONS:
        raise EnvelopeError("data.function", "not on the allow-list")
    if instance is not None or kwargs or len(args) != 1:
        raise EnvelopeError("data.args", "expected exactly one batch argument")
    if not isinstance(args[0], list) and not is_reference(args[0]):
        raise EnvelopeError("data.args", "expected a list of TurnEvent objects or a batch")
