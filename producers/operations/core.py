"""The editor operations: typed requests in, typed replies out, for every client.

``turngraph bridge``, ``turngraph mcp``, the local endpoint and the hooks all answer
through :meth:`Operations.handle_request`, so consent, scope hashing (raw keys are hashed
here, ``producers.scopes``), validation and the fail-open deadline are decided in one
place. Each request gets one reply (``success``; on failure ``error_code``,
``user_message``, ``remediation``, never chat text or secrets). The models:
``schemas.bridge``; the protocol: ``turngraph bridge --help``; the distilled-memory ops:
``producers.operations.distill``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import structlog
from pydantic import BaseModel, ValidationError

from turngraph.producers.consent import ConsentStore, enable_command
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.distill import DistillOps, unavailable
from turngraph.producers.redaction import secret_free_id
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.bridge import (
    MAX_FLUSH_TIMEOUT_S,
    REQUEST_MODELS,
    Clamped,
    FlushReply,
    FlushRequest,
    PublishReply,
    PublishRequest,
    RecallBridgeRequest,
    RecallReply,
    StatusReply,
    StatusRequest,
)
from turngraph.schemas.bridge_common import error_reply
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.json_lines import InvalidLineError, parse_line, request_id
from turngraph.schemas.recall import CLAMPED_RECALL_OPTIONS, clamp_option
from turngraph.schemas.turn_event import TurnEvent
from turngraph.schemas.validation import described_fields

__all__ = ["Operations", "line_refusal"]

log = structlog.get_logger(__name__)


def line_refusal(refused: InvalidLineError, request_id: str | int | None) -> dict[str, Any]:
    """The reply to a line that cannot be read, with its ``id`` when that could be read."""
    code = ErrorCode.INVALID_JSON if refused.reason == "not_json" else ErrorCode.INVALID_REQUEST
    reply = error_reply(code, refused.user_message, refused.remediation).model_dump(
        mode="json", exclude_none=True
    )
    return {"id": request_id, **reply} if request_id is not None else reply


def _invalid_fields(exc: ValidationError, prefix: str = "") -> str:
    """The invalid fields, each with what the schema expects there (never the input)."""
    return ", ".join(described_fields(exc, "(root)", prefix))


class Operations:
    """Answers requests.

    ``backend`` holds the Redis-side clients; they may be None when no Redis is known at
    start-up, and are looked for again, or found again after a restart (:class:`Backend`);
    meanwhile the ops that need them answer ``BACKEND_UNAVAILABLE``.
    """

    def __init__(
        self,
        *,
        hasher: ScopeHasher,
        consent: ConsentStore,
        backend: Backend,
        hints: ScopeHints | None = None,
    ) -> None:
        self._hasher = hasher
        self._hints = hints
        self._consent = consent
        self._endpoint = endpoint = backend.endpoint
        self.backend = backend
        self._ops: dict[str, Callable[[Any], BaseModel]] = {
            "publish": self.publish,
            "recall": self.recall,
            "flush": self.flush,
            "status": self.status,
        }
        self._distill = DistillOps(
            hasher=hasher,
            consent=consent,
            endpoint=endpoint,
            backend=lambda: self.backend.distiller,
        )
        self._ops.update(self._distill.ops())

    @property
    def hasher(self) -> ScopeHasher:
        """How this bridge hashes raw scope keys."""
        return self._hasher

    # -- requests ------------------------------------------------------------------------

    def handle_line(self, line: str) -> dict[str, Any]:
        """One request line in, one reply object out; never raises. A line that cannot be
        read (``schemas.json_lines``: empty, too long, too deep, not JSON, NaN, a lone
        surrogate) is answered with the request's ``id`` when it can be read."""
        try:
            request = parse_line(line)
        except InvalidLineError as refused:
            return line_refusal(refused, request_id(line))
        return self.handle_request(request, line=line)

    def handle_request(self, request: Any, *, line: str | None = None) -> dict[str, Any]:
        """One decoded request (a JSON object) in, one reply object out; never raises.

        ``line`` is the request's JSON text when the caller has it (saves re-encoding).
        """
        request_id: Any = None
        try:
            if not isinstance(request, dict):
                return error_reply(
                    ErrorCode.INVALID_REQUEST,
                    "the request must be a JSON object",
                    'send an object such as {"op": "status"}',
                ).model_dump(mode="json", exclude_none=True)
            raw_id = request.get("id")
            if isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
                request_id = raw_id
            reply = self._dispatch(request, line)
        except Exception as exc:  # the bridge must outlive any bug
            log.error("bridge_internal_error", error=type(exc).__name__)
            reply = error_reply(
                ErrorCode.INTERNAL_ERROR,
                "the bridge failed on this request",
                "retry; if it persists, report it with the bridge's log",
            )
        answer = reply.model_dump(mode="json", exclude_none=True)
        answer.pop("id", None)
        return {"id": request_id, **answer} if request_id is not None else answer

    def _dispatch(self, request: dict[str, Any], line: str | None) -> BaseModel:
        op = request.get("op")
        model = REQUEST_MODELS.get(op) if isinstance(op, str) else None
        if model is None or not isinstance(op, str):
            return error_reply(
                ErrorCode.UNKNOWN_OP, "unknown or missing op", f"use one of: {', '.join(self._ops)}"
            )
        try:
            # Strict JSON validation: the types a client writes are the types the schema says.
            typed = model.model_validate_json(line if line is not None else json.dumps(request))
        except ValidationError as exc:
            what = "turn event" if op == "publish" else f"{op} request"
            return error_reply(
                ErrorCode.INVALID_REQUEST,
                f"invalid {what}: {_invalid_fields(exc)}",
                f"fix the named fields (see schemas/json/bridge_{op}_request.schema.json)",
            )
        self.backend.ensure()
        return self._ops[op](typed)

    def close(self) -> None:
        """Deliver what is buffered (bounded wait) and stop the publisher."""
        if self.backend.publisher is not None:
            self.backend.publisher.close()

    # -- ops -----------------------------------------------------------------------------

    def build_event(self, raw: Any) -> TurnEvent:
        """A TurnEvent from the editor's fields (a dict or a ``BridgeTurn``), with raw scope
        keys hashed; raises ``ValidationError`` or ``ValueError``."""
        if isinstance(raw, BaseModel):
            raw = raw.model_dump(exclude_none=True)
        if not isinstance(raw, dict):
            raise ValueError("event must be an object")
        fields = dict(raw)
        for name in ("session_id", "workspace", "user"):
            value = fields.get(name)
            if not isinstance(value, str) or not value:
                raise ValueError(f"{name} must be a non-empty string")
        fields["session_id"] = self._hasher.session(fields["session_id"])
        fields["workspace"] = self._hasher.workspace(fields["workspace"])
        fields["user"] = self._hasher.user(fields["user"])
        fields.setdefault("occurred_at", datetime.now(UTC))
        return TurnEvent.model_validate(fields)

    def publish(self, request: PublishRequest) -> BaseModel:
        """Op ``publish``: validate, hash, check consent, buffer (fire-and-forget)."""
        try:
            event = self.build_event(request.event)
        except (ValidationError, ValueError) as exc:
            fields = (
                _invalid_fields(exc, "event.") if isinstance(exc, ValidationError) else str(exc)
            )
            return error_reply(
                ErrorCode.INVALID_REQUEST,
                f"invalid turn event: {fields}",
                "fix the named fields (see schemas/json/bridge_publish_request.schema.json)",
            )
        if not self._consent.is_enabled(event.workspace, self._endpoint):
            return error_reply(
                ErrorCode.CONSENT_REQUIRED,
                "publishing is not enabled for this workspace",
                enable_command(request.event.workspace),
            )
        publisher = self.backend.publisher
        if publisher is None:
            return unavailable()
        if self._hints is not None:
            self._hints.note(
                workspace_id=event.workspace,
                raw_workspace=request.event.workspace,
                session_id=event.session_id,
            )
        buffered = publisher.publish(event)
        if buffered and not self.backend.delivering():
            # Kept in this bridge's buffer, not delivered: say so (success false), with what
            # the client needs to follow it (flush reports when it has gone through).
            return error_reply(
                ErrorCode.BACKEND_UNAVAILABLE,
                "memory is not reachable: the turn is kept in this bridge and sent when Redis "
                "answers again, unless the bridge closes first",
                "start it with `turngraph up` (or check TURNGRAPH_REDIS_URL); `flush` says "
                "when it went through",
            ).model_copy(
                update={"event_id": secret_free_id(event.event_id), "pending": publisher.pending}
            )
        return PublishReply(
            event_id=secret_free_id(event.event_id),  # the id it is stored under
            buffered=buffered,
            dropped=None if buffered else "local_buffer_full",
        )

    def recall(self, request: RecallBridgeRequest) -> BaseModel:
        """Op ``recall``: clamp the options, hash the scope keys, ask the recall workers
        (fails open within the deadline)."""
        options: dict[str, Any] = {}
        clamped: dict[str, Clamped] = {}
        for name in ("scopes", "conversation_context", "include_superseded"):
            value = getattr(request, name)
            if value is not None:
                options[name] = value
        for name in CLAMPED_RECALL_OPTIONS:
            value = getattr(request, name)
            if value is None:
                continue
            used = clamp_option(name, value)
            used = int(used) if isinstance(value, int) else used
            if used != value:
                clamped[name] = Clamped(requested=value, used=used)
            options[name] = used
        for name, hash_key in (
            ("session_id", self._hasher.session),
            ("workspace", self._hasher.workspace),
            ("user", self._hasher.user),
        ):
            value = getattr(request, name)
            if value is not None:
                options[name] = hash_key(value)
        recaller = self.backend.recaller
        if recaller is None:
            reply: BaseModel = unavailable()
        else:
            response = recaller.recall(request.query, **options)
            reply = RecallReply.model_validate(response.model_dump())
        if clamped:
            reply = reply.model_copy(update={"clamped": clamped})
        return reply

    def flush(self, request: FlushRequest) -> BaseModel:
        """Op ``flush``: wait (bounded) until buffered events are answered by Redis."""
        timeout = min(request.timeout_s, MAX_FLUSH_TIMEOUT_S)
        clamped = (
            {"timeout_s": Clamped(requested=request.timeout_s, used=timeout)}
            if timeout != request.timeout_s
            else None
        )
        publisher = self.backend.publisher
        if publisher is None:
            return unavailable().model_copy(update={"clamped": clamped})
        if publisher.flush(timeout):
            return FlushReply(clamped=clamped)
        return unavailable().model_copy(update={"pending": publisher.pending, "clamped": clamped})

    def status(self, request: StatusRequest) -> BaseModel:
        """Op ``status``: whether memory is reachable now (a PING within a short deadline and
        the recall replicas' heartbeats, not what the last publish found), this bridge's
        publisher counters and the shared queue counters."""
        reply = StatusReply(endpoint=self._endpoint, redis_available=False)
        backend = self.backend
        if backend.publisher is not None:
            reply.publisher = backend.publisher.stats().as_dict()
            reply.pending = backend.publisher.pending
        if backend.probe is not None:
            reached = backend.reachable(fresh=True)
            reply.redis_available = reached.redis
            reply.recall_replicas = reached.recall_replicas
        elif backend.publisher is not None:
            reply.redis_available = backend.publisher.redis_available
        if not reply.redis_available:
            reply.degraded = ["redis_unreachable"]
            return reply  # the queue's counters would only time out again
        if backend.queue_status is not None:
            try:
                reply.queue = dict(backend.queue_status())
            except Exception as exc:  # status must answer even when Redis does not
                reply.queue = None
                reply.degraded = [f"queue_status_{type(exc).__name__}"]
        return reply
