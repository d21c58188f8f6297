"""Poison isolation: a batch that fails for a permanent reason is bisected until the bad
turn is alone; the good ones are written in the same round, the bad one is reported once.

Transient failures (a backend restarting) are not bisected: the whole batch is retried
later, as before. What counts as transient is decided here, once, at the ingest boundary:
our :class:`TransientError` and the network errors of the Redis and graph clients; any
other exception is a property of the turns and so permanent (never "transient by
default", which retried a poison turn eight times with its whole batch).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import neo4j.exceptions
import redis
from rq.timeouts import JobTimeoutException

from turngraph.schemas.errors import TransientError

__all__ = ["TRANSIENT_LIBRARY_ERRORS", "Isolated", "R", "is_transient", "run_isolating"]

T = TypeVar("T")
R = TypeVar("R")

TRANSIENT_LIBRARY_ERRORS: tuple[type[BaseException], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    neo4j.exceptions.ServiceUnavailable,
    neo4j.exceptions.SessionExpired,
    neo4j.exceptions.TransientError,
    JobTimeoutException,
)
"""Client errors that mean "the backend is away or busy", should any escape unconverted;
and RQ's job timeout: a slow endpoint or backend, never a property of the turns (it
fires once, so a split batch would run on without a deadline)."""


def is_transient(exc: BaseException) -> bool:
    """True when retrying the same turns later can succeed."""
    return isinstance(exc, (TransientError, *TRANSIENT_LIBRARY_ERRORS))


@dataclass
class Isolated(Generic[T, R]):
    """Results of the sub-batches that went through, and each poison item with its error."""

    results: list[R] = field(default_factory=list)
    poisoned: list[tuple[T, Exception]] = field(default_factory=list)
    attempts: int = 0


def run_isolating(run: Callable[[Sequence[T]], R], items: Sequence[T]) -> Isolated[T, R]:
    """``run(items)``; on a permanent failure, ``run`` on each half, recursively.

    A transient failure propagates (at any depth: the caller retries the whole batch; the
    halves already written are idempotent). ``run`` must be all-or-nothing per call.
    """
    out: Isolated[T, R] = Isolated()
    _run(run, list(items), out)
    return out


def _run(run: Callable[[Sequence[T]], R], items: list[T], out: Isolated[T, R]) -> None:
    if not items:
        return
    out.attempts += 1
    try:
        out.results.append(run(items))
        return
    except Exception as exc:
        if is_transient(exc):
            raise
        if len(items) == 1:
            out.poisoned.append((items[0], exc))
            return
    middle = len(items) // 2
    _run(run, items[:middle], out)
    _run(run, items[middle:], out)
