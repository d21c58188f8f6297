"""The serving end of the request/reply exchange (``request_reply.py``), run by the recall
replica and by the maintenance worker's admission of distillation asks.

:class:`RequestServer` pops requests, refuses reply keys outside its namespace, answers
an invalid request with a typed error, drops one past its deadline and answers the rest
on their reply key with a TTL, counting each outcome; a reply and the next pop share one
round trip, and several lists are served in turn. docs/producers.md ("Recall and distill
requests").
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar, cast

import redis
import structlog
from pydantic import BaseModel, ValidationError

from turngraph.producers.request_reply import (
    Pushed,
    Request,
    invalid_request,
    push_message,
    push_then_pop,
)
from turngraph.schemas.bridge_common import WorkerReply
from turngraph.schemas.json_lines import MAX_DEPTH, nesting_depth
from turngraph.schemas.validation import invalid_fields

__all__ = ["POP_TIMEOUT_S", "ReplySent", "RequestServer", "ServeCounters"]

log = structlog.get_logger(__name__)

ReplyT = TypeVar("ReplyT", bound=WorkerReply)
RequestT = TypeVar("RequestT", bound=BaseModel)

POP_TIMEOUT_S = 1.0
"""How long one server blocking pop waits before the loop checks whether it should stop
(below the client's socket timeout: redis-py reads a blocking command's answer with it)."""

REDIS_ERROR_PAUSE_S = 0.5
"""A serving loop's pause after a Redis error before it pops again."""


ReplySent = Callable[[float], None]
"""Told the ``time.perf_counter()`` moment by which Redis had stored a reply (never called
for a reply lost)."""


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
    """Replies whose push Redis refused, or that a lost connection may have lost: the
    client's ``ask`` ends at its deadline. Their requests are counted under their own
    outcome too (``answered``, or ``malformed`` for an error reply)."""


class RequestServer(Generic[RequestT, ReplyT]):
    """The serving end: pop, check, reply, count (the handler is the caller's).

    While :meth:`run` serves, :meth:`reply` only keeps the reply, and the next :meth:`pop`
    sends it and waits for the next request in one round trip (a pipeline ending in a
    blocking pop): a server wakes once per answer (docs/history.md). The loop's pop follows
    the handler at once; a reply kept when the loop stops is sent then. A request popped
    while the server is told to stop is still answered.

    Several lists (a replica's shards, the operator's and each tenant's) are popped in
    turn: every pop looks first at the list after the one it last took a request from
    (Redis pops the first non-empty list it is given: in a fixed order the last list's
    requests would wait behind the others', docs/history.md)."""

    def __init__(
        self,
        conn: redis.Redis,
        request_model: type[RequestT],
        reply_model: type[ReplyT],
        *,
        reply_ttl_s: int,
        counters: ServeCounters | None = None,
        queued_observer: Callable[[float], None] | None = None,
    ) -> None:
        """``queued_observer`` is told, for each valid request that carries
        ``sent_at_ms`` (late ones too), the seconds from it to the request's check here:
        its wait in the list, by its client's clock and this host's (0 when they
        disagree the other way)."""
        self._redis = conn
        self._queued_observer = queued_observer
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
                pushed = push_then_pop(
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

    def _sent(self, replies: Sequence[_Reply], pushed: Pushed) -> None:
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
        now_ms = int(time.time() * 1000)
        if fields_of.sent_at_ms is not None and self._queued_observer is not None:
            self._queued_observer(max(0, now_ms - fields_of.sent_at_ms) / 1000)
        if fields_of.sent_at_ms is not None and now_ms > (
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
        try:
            push_message(self._redis, reply_to, response, self._reply_ttl_s)
        except redis.RedisError:  # refused, or the connection lost with it
            self.counters.replies_lost += 1
            raise
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
            pushed = push_then_pop(
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
