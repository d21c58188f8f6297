"""The one module that knows RQ's internals: its Redis layout and its private names.

Everything else uses RQ's public API (``Queue``, ``Job.fetch``, registries' ``key``,
``Retry``) or calls this module. What is here is what RQ does not offer publicly and we
rely on:

- RQ's key names (``rq:queue:<name>``, ``rq:job:<id>``, ...), for the bounded-enqueue
  script and the batching worker, which address RQ's lists and hashes from Lua;
- the job hash the bounded-enqueue script writes field by field (``enqueue.lua``: a job
  RQ's ``Job.fetch`` restores and a stock worker runs), with its ``data`` encoding and
  its retry fields, built here from the one retry policy in ``schemas/defaults.py``;
- the scheduler process RQ forks for a worker (RQ keeps it in a private attribute).

``tests/integration/test_rq_internals.py`` pins each of these against RQ itself, and
``tests/integration/test_rq_versions.py`` runs those tests against the lowest and the
highest RQ that ``pyproject.toml`` allows; ``tests/unit/test_rq_private_names.py`` fails
when a private RQ name is used anywhere else. No ``rq`` import here (producers never
import RQ): what RQ hands us is duck-typed.
"""

from __future__ import annotations

import functools
import json
import zlib
from datetime import UTC, datetime
from importlib.resources import files
from typing import Any

from turngraph.schemas.defaults import RETRIES, RETRY_INTERVALS_S

__all__ = [
    "COMPRESS_ABOVE_BYTES",
    "DESCRIPTION_PREFIX",
    "RQ_FAILED_PREFIX",
    "RQ_JOB_PREFIX",
    "RQ_QUEUES_KEY",
    "RQ_QUEUE_PREFIX",
    "enqueue_script_source",
    "job_data",
    "job_description",
    "retry_fields",
    "rq_timestamp",
    "scheduler_process",
]

RQ_QUEUE_PREFIX = "rq:queue:"
"""RQ's key prefix of a queue's list (``Queue(name).key``)."""

RQ_QUEUES_KEY = "rq:queues"
"""RQ's set of known queues (``Queue.redis_queues_keys``); workers and ``rq info`` read it."""

RQ_JOB_PREFIX = "rq:job:"
"""RQ's key prefix of a job hash (``Job.key_for(id)``)."""

RQ_FAILED_PREFIX = "rq:failed:"
"""RQ's key prefix of a queue's failed-job registry (``FailedJobRegistry(name).key``)."""

COMPRESS_ABOVE_BYTES = 16 * 1024
"""Job data longer than this is zlib-compressed, as RQ does; shorter data is stored as
plain JSON, which RQ's ``Job.restore`` reads through its documented uncompressed fallback.
Compressing costs 30-60 µs per turn whatever its size (zlib's set-up dominates), more than
the rest of a publication; it pays off only for long pastes."""

DESCRIPTION_PREFIX = "ingest_turn("
"""RQ's ``description`` of a job is this, the event id and ``)``: never chat text (RQ's
default would put 75 characters of every argument into Redis and the worker's log)."""

_RQ_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S.%fZ"
_DATA_TAIL = b"], {}]"


def rq_timestamp(epoch_s: float) -> str:
    """A time in RQ's own format (``rq.utils.utcformat``)."""
    return datetime.fromtimestamp(epoch_s, UTC).strftime(_RQ_TIME_FORMAT)


def job_description(event_id: str) -> str:
    """RQ's ``description`` of the event's job (written by the enqueue script)."""
    return f"{DESCRIPTION_PREFIX}{event_id})"


@functools.cache
def _data_head(function: str) -> bytes:
    return b"[" + json.dumps(function).encode() + b", null, ["


def job_data(event_json: bytes, function: str) -> bytes:
    """The job's ``data`` field: RQ's JSON-serialized ``(func, instance, args, kwargs)``.

    Byte for byte what ``rq.serializers.JSONSerializer.dumps`` gives for
    ``(function, None, (event,), {})``, spliced around the event's JSON.
    """
    data = _data_head(function) + event_json + _DATA_TAIL
    if len(data) > COMPRESS_ABOVE_BYTES:
        return zlib.compress(data)
    return data


def retry_fields() -> tuple[str, str]:
    """``retries_left`` and ``retry_intervals`` as RQ's ``Retry(max=RETRIES,
    interval=RETRY_INTERVALS_S)`` stores them in a job hash (``schemas/defaults.py``)."""
    return str(RETRIES), json.dumps(list(RETRY_INTERVALS_S))


def enqueue_script_source() -> str:
    """The bounded-enqueue script (``enqueue.lua``), which writes RQ job hashes."""
    return files("turngraph.producers").joinpath("enqueue.lua").read_text(encoding="utf-8")


def scheduler_process(worker: Any) -> Any:
    """The process RQ forked to run ``worker``'s scheduler, or None.

    RQ keeps it in the scheduler's private ``_process`` and offers no public accessor
    (``Worker.stop_scheduler`` reads it the same way)."""
    scheduler = getattr(worker, "scheduler", None)
    return getattr(scheduler, "_process", None) if scheduler is not None else None
