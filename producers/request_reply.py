"""One request/reply exchange over Redis: the contract and the asking end (recall and
on-demand distillation).

A client pushes a request (JSON with ``request_id``, ``reply_to``, ``deadline_ms`` and
``sent_at_ms``) on a Redis list and block-pops its per-request ``reply_to`` key until the
deadline (:func:`ask`). The serving end is ``request_server.py``; both push with
:func:`push_then_pop`, which can take the server's next request in the same round trip.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

import redis
import structlog
from pydantic import BaseModel, ValidationError

from turngraph.schemas.bridge_common import WorkerReply
from turngraph.schemas.errors import ErrorCode, TransientError

__all__ = [
    "DeadlineExceeded", "NotPermitted", "Pushed", "Request", "RequestFailed", "ServerUnavailable",
    "UnreadableReply", "ask", "invalid_request", "is_reply_key", "push_message", "push_then_pop",
]  # fmt: skip

log = structlog.get_logger(__name__)

REPLY_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""What may follow a reply prefix: a reply key names one request, nothing else."""


class Request(Protocol):
    """The fields every request model carries for the exchange."""

    @property
    def request_id(self) -> str: ...
    @property
    def reply_to(self) -> str: ...
    @property
    def deadline_ms(self) -> int: ...
    @property
    def sent_at_ms(self) -> int | None: ...

    def model_dump_json(self) -> str: ...


ReplyT = TypeVar("ReplyT", bound=WorkerReply)


class RequestFailed(TransientError):
    """No usable answer; ``code``, ``reason`` (the ``degraded`` flag) and ``remediation``
    say why and what to do, with no request content."""

    code = ErrorCode.INTERNAL_ERROR
    reason = "bad_reply"
    user_message = "memory sent an unreadable answer"
    fix = "check that producers and {server} run the same schema version"

    def __init__(self, server: str) -> None:
        """``server`` names what answers, for the remediation ("a recall worker")."""
        super().__init__(self.user_message)
        self.remediation = self.fix.format(server=server)


class ServerUnavailable(RequestFailed):
    """Redis did not answer (refused, timed out, lost)."""

    code = ErrorCode.BACKEND_UNAVAILABLE
    reason = "redis_unavailable"
    user_message = "memory is unavailable right now"
    fix = "check that Redis and {server} are running (turngraph up)"


TENANT_LIMIT_FIX = (
    "a tenant credential (TURNGRAPH_TENANT) reaches only its own tenant's publish, "
    "recall and status; summaries, recaps and the rolling context need the operator's "
    "(docs/security.md#tenants)"
)
"""What to do when Redis refuses a key to the caller's credential (``NOPERM``)."""


class NotPermitted(RequestFailed):
    """Redis refused the credential these keys (``NOPERM``): a tenant's may publish and
    recall only, so waiting for a worker or restarting one would change nothing."""

    code = ErrorCode.NOT_AVAILABLE
    reason = "not_permitted"
    user_message = "not available on this credential (a tenant's)"
    fix = TENANT_LIMIT_FIX


class DeadlineExceeded(RequestFailed):
    """Nobody answered within the request's deadline."""

    code = ErrorCode.DEADLINE_EXCEEDED
    reason = "deadline_exceeded"
    user_message = "memory did not answer in time"
    fix = "start {server}, or raise deadline_ms"


class UnreadableReply(RequestFailed):
    """The answer failed validation: the two ends run different schema versions."""


def ask(
    conn: redis.Redis,
    requests_key: str,
    request: Request,
    reply_model: type[ReplyT],
    *,
    request_ttl_s: int,
    server: str,
    started: float | None = None,
    push: Callable[[], object] | None = None,
) -> ReplyT:
    """Push ``request`` on ``requests_key`` (which expires after ``request_ttl_s`` unless
    served) and wait on its ``reply_to`` until ``deadline_ms`` after ``started`` (a
    ``time.monotonic()`` value; default now). ``server`` names what answers, for the
    remediation ("a recall worker"). A deadline longer than ``conn``'s socket timeout is
    waited for in several pops; a socket timeout close to the client's usual deadline
    bounds how long a Redis that does not answer holds the caller. ``push`` sends the
    request instead of :func:`push_message` (one that checks something in the same round
    trip may raise a :class:`RequestFailed` to answer at once). Raises
    :class:`ServerUnavailable`, :class:`DeadlineExceeded` or :class:`UnreadableReply`."""
    started = time.monotonic() if started is None else started
    try:
        if push is None:
            push_message(conn, requests_key, request, request_ttl_s)
        else:
            push()
        popped = _pop_until(conn, request.reply_to, started + request.deadline_ms / 1000)
    except redis.exceptions.NoPermissionError as exc:
        log.warning("request_not_permitted", request_id=request.request_id)
        raise NotPermitted(server) from exc
    except redis.RedisError as exc:
        log.warning("request_unavailable", request_id=request.request_id, error=type(exc).__name__)
        raise ServerUnavailable(server) from exc
    if popped is None:
        log.info("request_deadline_exceeded", request_id=request.request_id)
        raise DeadlineExceeded(server)
    try:
        return reply_model.model_validate_json(popped[1])
    except ValidationError as exc:
        raise UnreadableReply(server) from exc


POP_READ_MARGIN_S = 0.25
"""How much longer than a blocking pop's own timeout its answer may take to be read."""


def _pop_until(conn: redis.Redis, key: str, deadline: float) -> Any:
    """``BLPOP key`` until ``deadline`` (a ``time.monotonic()`` value), in waits the
    connection's socket timeout can read: one pop for a deadline longer than it timed out
    reading (``TimeoutError``, reported as Redis being unavailable)."""
    socket_timeout = conn.connection_pool.connection_kwargs.get("socket_timeout")
    step = None if socket_timeout is None else max(socket_timeout - POP_READ_MARGIN_S, 0.05)
    while (remaining := deadline - time.monotonic()) > 0:
        wait = remaining if step is None else min(remaining, step)
        popped = conn.blpop([key], timeout=max(wait, 0.001))
        if popped is not None:
            return popped
    return None


def is_reply_key(value: object, prefix: str) -> bool:
    """True for ``prefix`` plus one request id. Any other key (the ingest queue, the
    change stream...) would be written into, and then expired, by a reply."""
    return (
        isinstance(value, str)
        and value.startswith(prefix)
        and REPLY_ID.fullmatch(value[len(prefix) :]) is not None
    )


def push_message(conn: redis.Redis, key: str, message: BaseModel | Request, ttl_s: int) -> None:
    """Push ``message`` (a request or a reply) on the list ``key``, which expires unread
    after ``ttl_s``."""
    pushed = push_then_pop(conn, [(key, message.model_dump_json())], ttl_s, (), 0.0)
    if pushed.error is not None:
        raise pushed.error


@dataclass(frozen=True)
class Pushed:
    taken: tuple[str, bytes] | None
    """(list, message) popped after the pushes, or None."""
    stored: tuple[bool, ...]
    """Per message: whether Redis took its push."""
    stored_at: float
    """The ``time.perf_counter()`` moment by which Redis had run the pushes."""
    error: redis.RedisError | None
    """The first error (a push's, or the pop's)."""

    @property
    def failed(self) -> int:
        """Pushes Redis refused."""
        return self.stored.count(False)


def push_then_pop(
    conn: redis.Redis,
    messages: Sequence[tuple[str, str]],
    ttl_s: int,
    pop_next: Sequence[str],
    timeout_s: float,
    *,
    clock: bool = False,
) -> Pushed:
    """Push each (list, message) of ``messages`` (lists expiring unread after ``ttl_s``)
    and, in the same round trip, pop the first message on the lists ``pop_next``, waiting
    up to ``timeout_s`` for one (``BLMPOP``, Redis 7; outside a transaction a blocking
    command blocks as alone, and Redis has executed the pushes before it waits). What was
    popped is returned even when a push failed: it must not be lost.

    The pipeline returns only when the pop does, possibly a wait later. With ``clock``,
    Redis's ``TIME`` before and after the pop says how long it waited after the pushes,
    which ``stored_at`` leaves out; otherwise ``stored_at`` is when the pipeline returned."""
    timed = clock and bool(pop_next)
    with conn.pipeline(transaction=False) as pipe:
        for key, message in messages:
            pipe.rpush(key, message)
            pipe.expire(key, ttl_s)
        if timed:
            pipe.time()
        if pop_next:
            pipe.blmpop(timeout_s, len(pop_next), *pop_next, direction="LEFT")
        if timed:
            pipe.time()
        sent = time.perf_counter()
        results = pipe.execute(raise_on_error=False)
    returned = time.perf_counter()
    errors = [r for r in results if isinstance(r, redis.RedisError)]
    stored = tuple(not isinstance(r, redis.RedisError) for r in results[: 2 * len(messages) : 2])
    stored_at = returned
    if timed:
        before, popped, after = results[-3:]
        stored_at -= min(max(_seconds_between(before, after), 0.0), returned - sent)
    else:
        popped = results[-1] if pop_next else None
    taken = None if popped is None or isinstance(popped, Exception) else _taken(popped)
    return Pushed(taken, stored, stored_at, errors[0] if errors else None)


def _taken(popped: Any) -> tuple[str, bytes]:
    return popped[0].decode(), popped[1][0]


def _seconds_between(before: object, after: object) -> float:
    """Seconds from one ``TIME`` answer (seconds, microseconds) to another; 0 when either
    is an error (then the pipeline's return stands for the push: later, never earlier)."""
    if not isinstance(before, tuple) or not isinstance(after, tuple):
        return 0.0
    return (after[0] - before[0]) + (after[1] - before[1]) / 1_000_000


def invalid_request(
    reply_model: type[ReplyT], request_id: str, what: str, fields: Sequence[str]
) -> ReplyT:
    """``INVALID_REQUEST`` naming the invalid fields of a ``what`` request, never their
    values (the clients' and the servers' one wording)."""
    return reply_model.failure(
        request_id,
        ErrorCode.INVALID_REQUEST,
        f"invalid {what} request: {', '.join(fields)}",
        "fix the named fields and try again",
    )
