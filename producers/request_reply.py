"""One request/reply exchange over Redis, both ends (recall and on-demand distillation).

A client pushes a request (JSON with ``request_id``, ``reply_to``, ``deadline_ms`` and
``sent_at_ms``) on a Redis list and block-pops its per-request ``reply_to`` key until the
deadline (:func:`ask`). A server pops requests, refuses reply keys outside its namespace,
answers an invalid request with a typed error, drops one past its deadline and answers the
rest on their reply key with a TTL, counting each outcome (:class:`RequestServer`). While
it serves, each reply and the next (blocking) pop share one round trip, so a server wakes
once per answer; a reply's caller can be told when Redis stored it (:data:`ReplySent`),
which that round trip learns from Redis's clock. A server popping several lists takes
them in turn (the one after the list it last served first), so no list waits behind
another's backlog.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, cast

import redis
import structlog
from pydantic import BaseModel, ValidationError

from turngraph.schemas.bridge_common import WorkerReply
from turngraph.schemas.errors import ErrorCode, TransientError
from turngraph.schemas.json_lines import MAX_DEPTH, nesting_depth
from turngraph.schemas.validation import invalid_fields

__all__ = [
    "DeadlineExceeded",
    "ReplySent",
    "RequestFailed",
    "RequestServer",
    "ServeCounters",
    "ServerUnavailable",
    "UnreadableReply",
    "ask",
    "invalid_request",
    "is_reply_key",
    "push_message",
]

log = structlog.get_logger(__name__)

POP_TIMEOUT_S = 1.0
"""How long one server blocking pop waits before the loop checks whether it should stop
(below the client's socket timeout: redis-py reads a blocking command's answer with it)."""

REDIS_ERROR_PAUSE_S = 0.5
"""A serving loop's pause after a Redis error before it pops again."""

REPLY_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
"""What may follow a reply prefix: a reply key names one request, nothing else."""


ReplySent = Callable[[float], None]
"""Told the ``time.perf_counter()`` moment by which Redis had stored a reply (never called
for a reply lost)."""


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
RequestT = TypeVar("RequestT", bound=BaseModel)


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
    remediation ("a recall worker"). ``conn`` should have a socket timeout at least as long
    as the deadline. ``push`` sends the request instead of :func:`push_message` (one that
    checks something in the same round trip may raise a :class:`RequestFailed` to answer
    at once). Raises :class:`ServerUnavailable`, :class:`DeadlineExceeded` or
    :class:`UnreadableReply`."""
    started = time.monotonic() if started is None else started
    try:
        if push is None:
            push_message(conn, requests_key, request, request_ttl_s)
        else:
            push()
        remaining = request.deadline_ms / 1000 - (time.monotonic() - started)
        popped: Any = (
            conn.blpop([request.reply_to], timeout=max(remaining, 0.001)) if remaining > 0 else None
        )
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
    pushed = _push_then_pop(conn, [(key, message.model_dump_json())], ttl_s, (), 0.0)
    if pushed.error is not None:
        raise pushed.error


@dataclass(frozen=True)
class _Pushed:
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


def _push_then_pop(
    conn: redis.Redis,
    messages: Sequence[tuple[str, str]],
    ttl_s: int,
    pop_next: Sequence[str],
    timeout_s: float,
    *,
    clock: bool = False,
) -> _Pushed:
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
    return _Pushed(taken, stored, stored_at, errors[0] if errors else None)


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


@dataclass(frozen=True)
class _Reply:
    """A reply kept while serving, for the next pop to send."""

    key: str
    message: str
    on_sent: ReplySent | None


@dataclass
class ServeCounters:
    """What a server did with the requests it popped (one field per outcome)."""

    answered: int = 0
    """Requests handled (recall: answered; distillation asks: admitted as a job)."""
    skipped_late: int = 0
    """Requests popped after their deadline: the client has given up, nobody is answered."""
    malformed: int = 0
    refused_reply_to: int = 0
    """Requests naming a reply key outside the server's reply namespace: never answered."""
    replies_lost: int = 0
    """Replies (counted in ``answered`` too) whose push Redis refused, or that a lost
    connection may have lost: the client's ``ask`` ends at its deadline."""


class RequestServer(Generic[RequestT, ReplyT]):
    """The serving end: pop, check, reply, count (the handler is the caller's).

    While :meth:`run` serves, :meth:`reply` only keeps the reply, and the next :meth:`pop`
    sends it and waits for the next request in one round trip (a pipeline ending in a
    blocking pop): a server wakes once per answer, not for the reply's round trip and
    again for the request (docs/scaling.md). The loop's pop follows the handler at once,
    so the reply waits for nothing but the rest of ``serve_once``; a reply kept when the
    loop stops is sent then. A request popped while the server is told to stop is still
    answered.

    Several lists (a replica's shards, the operator's and each tenant's) are popped in
    turn: every pop looks first at the list after the one it last took a request from.
    Redis pops the first non-empty list it is given, so in a fixed order the last list's
    requests would wait for every request behind the others' (docs/scaling.md: at 50k
    memories the slowest 1 % of a 4-shard replica's answers were all the last shard's)."""

    def __init__(
        self,
        conn: redis.Redis,
        request_model: type[RequestT],
        reply_model: type[ReplyT],
        *,
        reply_ttl_s: int,
        counters: ServeCounters | None = None,
    ) -> None:
        self._redis = conn
        self._request_model = request_model
        self._reply_model = reply_model
        self._reply_ttl_s = reply_ttl_s
        self._kind = request_model.__name__.removesuffix("Request").lower()
        self.counters = counters if counters is not None else ServeCounters()
        self._keys: list[str] = []
        """The lists the last pop was given (``_in_turn`` orders them)."""
        self._last_key: str | None = None
        """The list the last request handed out came from: the others go first next."""
        self._taken: tuple[str, bytes] | None = None
        """A request taken by a pop whose replies failed, not handed out yet."""
        self._replies: list[_Reply] = []
        """Replies kept by :meth:`reply` while serving: the next pop sends them."""
        self._serving = False

    def pop(
        self, keys: Sequence[str], timeout_s: float = POP_TIMEOUT_S
    ) -> tuple[str, bytes] | None:
        """(list, raw request) of the first request on ``keys``; None after ``timeout_s``.
        Replies kept by :meth:`reply` go in the same round trip; if one failed, its error
        is raised and a request popped with it comes first at the next call."""
        if self._taken is not None:
            held, self._taken = self._taken, None
            self._last_key = held[0]
            return held
        self._keys = list(keys)
        if self._replies:
            replies, self._replies = self._replies, []
            try:
                pushed = _push_then_pop(
                    self._redis,
                    [(r.key, r.message) for r in replies],
                    self._reply_ttl_s,
                    self._in_turn(),
                    timeout_s,
                    clock=any(r.on_sent is not None for r in replies),
                )
            except redis.RedisError:  # connection lost: the replies may not have gone
                self.counters.replies_lost += len(replies)
                raise
            self._sent(replies, pushed)
            if pushed.taken is not None:
                self._last_key = pushed.taken[0]
            if pushed.error is not None:
                self._taken = pushed.taken
                raise pushed.error
            return pushed.taken
        popped: Any = self._redis.blpop(self._in_turn(), timeout=timeout_s)
        if popped is None:
            return None
        self._last_key = popped[0].decode()
        return self._last_key, popped[1]

    def _sent(self, replies: Sequence[_Reply], pushed: _Pushed) -> None:
        """Count the replies Redis refused; tell the others' callers when they were stored."""
        self.counters.replies_lost += pushed.failed
        for reply, stored in zip(replies, pushed.stored, strict=True):
            if stored and reply.on_sent is not None:
                reply.on_sent(pushed.stored_at)

    def _in_turn(self) -> list[str]:
        """The lists to pop, starting with the one after the list last served."""
        keys = self._keys
        if self._last_key not in keys:
            return keys
        after = keys.index(self._last_key) + 1
        return keys[after:] + keys[:after]

    def accept(
        self, raw: bytes | str, reply_allowed: Callable[[object], bool]
    ) -> tuple[RequestT | None, ReplyT | None]:
        """(request, None) for one to handle; else (None, the reply sent or None), counted.

        ``reply_allowed`` says whether a ``reply_to`` value (``""`` when none was given)
        may be answered on (see :func:`is_reply_key`). An invalid request naming an
        allowed key gets a typed error naming the fields (never their values). A request
        nesting arrays or objects deeper than ``MAX_DEPTH`` is dropped unparsed (the
        standard parser recurses: 100,000 levels raised ``RecursionError`` and ended the
        serving process), counted as malformed."""
        try:
            text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError:
            return self._malformed(["not UTF-8"])
        if nesting_depth(text) > MAX_DEPTH:
            return self._malformed([f"nested more than {MAX_DEPTH} levels deep"])
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            return self._malformed(["not JSON"])
        if not isinstance(data, dict):
            return self._malformed(["not an object"])
        reply_to = data.get("reply_to", "")
        if not reply_allowed(reply_to):
            self.counters.refused_reply_to += 1
            log.warning("request_refused", kind=self._kind, reason="reply_to outside reply keys")
            return None, None
        try:
            request = self._request_model.model_validate(data)
        except ValidationError as exc:
            fields = invalid_fields(exc, "request")
            request_id = str(data.get("request_id") or "unknown")[:128]
            return self._malformed(fields, reply_to, request_id)
        fields_of = cast(Request, request)
        if fields_of.sent_at_ms is not None and int(time.time() * 1000) > (
            fields_of.sent_at_ms + fields_of.deadline_ms
        ):
            self.counters.skipped_late += 1
            log.info("request_late", kind=self._kind, request_id=fields_of.request_id)
            return None, None
        return request, None

    def _malformed(
        self, fields: list[str], reply_to: object = "", request_id: str = "unknown"
    ) -> tuple[None, ReplyT | None]:
        self.counters.malformed += 1
        log.warning("request_malformed", kind=self._kind, fields=fields)
        if not isinstance(reply_to, str) or not reply_to:
            return None, None
        response = invalid_request(self._reply_model, request_id, self._kind, fields)
        self.reply(reply_to, response)
        return None, response

    def reply(self, reply_to: str, response: ReplyT, on_sent: ReplySent | None = None) -> None:
        """Push ``response`` on ``reply_to``, which expires unread after the reply TTL;
        while :meth:`run` serves, the next :meth:`pop` pushes it (the loop pops next).
        ``on_sent`` is told when Redis had stored it, once the push is known to have gone
        (the pop's wait for the next request left out), never for a reply lost."""
        if self._serving:
            self._replies.append(_Reply(reply_to, response.model_dump_json(), on_sent))
            return
        push_message(self._redis, reply_to, response, self._reply_ttl_s)
        if on_sent is not None:
            on_sent(time.perf_counter())

    def run(self, serve_once: Callable[[], object], stop: threading.Event) -> None:
        """Call ``serve_once`` (which pops with :meth:`pop`) until ``stop`` is set; a Redis
        error pauses, never ends it. Then the replies kept are sent, and a request popped
        with a failed one is served (its reply sent at once)."""
        self._serving = True
        try:
            while not stop.is_set():
                self._serve(serve_once, stop)
        finally:
            self._serving = False
            self._send_kept_replies()
        if self._taken is not None:
            self._serve(serve_once, stop)

    def _send_kept_replies(self) -> None:
        replies, self._replies = self._replies, []
        if not replies:
            return
        try:
            pushed = _push_then_pop(
                self._redis, [(r.key, r.message) for r in replies], self._reply_ttl_s, (), 0.0
            )
        except redis.RedisError as exc:
            self.counters.replies_lost += len(replies)
            log.warning("request_server_redis_error", kind=self._kind, error=type(exc).__name__)
            return
        self._sent(replies, pushed)
        if pushed.error is not None:
            log.warning(
                "request_server_redis_error", kind=self._kind, error=type(pushed.error).__name__
            )

    def _serve(self, serve_once: Callable[[], object], stop: threading.Event) -> None:
        try:
            serve_once()
        except redis.RedisError as exc:
            log.warning("request_server_redis_error", kind=self._kind, error=type(exc).__name__)
            stop.wait(REDIS_ERROR_PAUSE_S)
