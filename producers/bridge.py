"""The stdio bridge: JSON lines in, JSON lines out, for editors not written in Python.

An extension spawns ``turngraph bridge`` once per window and writes one request per line::

    {"id": 1, "op": "publish", "event": {"session_id": "...", "workspace": "/path",
     "user": "me", "turn_index": 3, "role": "user", "content": "...",
     "client": {"name": "vscode-ext", "version": "1.2.0"}}}
    {"id": 2, "op": "recall", "query": "which queue policy did we pick?", "workspace": "/path"}
    {"id": 3, "op": "flush", "timeout_s": 2}
    {"id": 4, "op": "status"}

Every line gets exactly one reply line with the seed bridge's contract: ``success`` and,
on failure, ``error_code``, ``user_message`` and ``remediation`` (never chat text or
secrets). A malformed line is answered with a typed error; the bridge never crashes on
input. Raw scope keys are hashed here (``producers.scopes``) before anything leaves.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import Enum
from typing import Any, BinaryIO, Protocol

import structlog
from pydantic import ValidationError

from producers.consent import ConsentStore
from producers.publisher import Publisher
from producers.scopes import ScopeHasher
from schemas.recall import RecallResponse
from schemas.turn_event import TurnEvent
from schemas.validation import invalid_fields

log = structlog.get_logger(__name__)

MAX_LINE_CHARS = 1_000_000
"""Longer request lines are refused (a turn's content is at most 200k characters)."""

MAX_LINE_BYTES = 4 * MAX_LINE_CHARS
"""A line read from stdin is cut (and refused) past this many bytes, so memory stays bounded."""

RECONNECT_EVERY_S = 2.0
"""Without a backend, the bridge looks for one at most this often."""

DEFAULT_FLUSH_TIMEOUT_S = 2.0
"""``flush`` waits this long unless the request says otherwise (capped at 30 s)."""


class BridgeError(str, Enum):
    """Error codes of the bridge's replies."""

    INVALID_JSON = "INVALID_JSON"
    INVALID_ENCODING = "INVALID_ENCODING"
    INVALID_REQUEST = "INVALID_REQUEST"
    UNKNOWN_OP = "UNKNOWN_OP"
    CONSENT_REQUIRED = "CONSENT_REQUIRED"
    BACKEND_UNAVAILABLE = "BACKEND_UNAVAILABLE"
    INTERNAL_ERROR = "INTERNAL_ERROR"


class Recaller(Protocol):
    """What the bridge needs from :class:`producers.recall_client.RecallClient`:
    ``recall(query, **options) -> RecallResponse``."""

    @property
    def recall(self) -> Callable[..., RecallResponse]:
        """``recall(query, **options)``, failing open with a degraded response."""
        ...


def error_reply(code: BridgeError, user_message: str, remediation: str) -> dict[str, Any]:
    """A failure in the seed bridge's contract."""
    return {
        "success": False,
        "error_code": code.value,
        "user_message": user_message,
        "remediation": remediation,
    }


def _invalid_fields(exc: ValidationError) -> str:
    """Names of the invalid fields only: pydantic's messages may quote the input."""
    return ", ".join(invalid_fields(exc, "(root)"))


_RECALL_OPTIONS = (
    "scopes",
    "conversation_context",
    "max_results",
    "max_tokens",
    "half_life_days",
    "include_superseded",
    "deadline_ms",
)


@dataclass(frozen=True)
class Backend:
    """What the bridge talks to once a Redis endpoint is known."""

    publisher: Publisher
    recaller: Recaller
    queue_status: Callable[[], Mapping[str, int]] | None = None


class Bridge:
    """Answers request lines.

    ``publisher`` / ``recaller`` may be None when no Redis is known at start-up: with
    ``connect`` given, the bridge asks it again (at most every ``RECONNECT_EVERY_S``) until
    it returns a :class:`Backend`, so a bridge started before ``turngraph up`` starts
    working once the services run; meanwhile those ops answer ``BACKEND_UNAVAILABLE``.
    """

    def __init__(
        self,
        *,
        hasher: ScopeHasher,
        consent: ConsentStore,
        endpoint: str,
        publisher: Publisher | None,
        recaller: Recaller | None,
        queue_status: Callable[[], Mapping[str, int]] | None = None,
        connect: Callable[[], Backend | None] | None = None,
    ) -> None:
        self._hasher = hasher
        self._consent = consent
        self._endpoint = endpoint
        self._publisher = publisher
        self._recaller = recaller
        self._queue_status = queue_status
        self._connect = connect
        self._last_connect = -RECONNECT_EVERY_S
        self._ops: dict[str, Callable[[dict[str, Any]], dict[str, Any]]] = {
            "publish": self.publish,
            "recall": self.recall,
            "flush": self.flush,
            "status": self.status,
        }

    # -- lines ---------------------------------------------------------------------------

    def handle_line(self, line: str) -> dict[str, Any]:
        """One request line in, one reply object out; never raises."""
        request_id: Any = None
        try:
            if len(line) > MAX_LINE_CHARS:
                return error_reply(
                    BridgeError.INVALID_REQUEST,
                    "the request line is too long",
                    f"send at most {MAX_LINE_CHARS} characters per line",
                )
            try:
                request = json.loads(line)
            except ValueError:
                return error_reply(
                    BridgeError.INVALID_JSON,
                    "the request line is not valid JSON",
                    "send one JSON object per line",
                )
            if not isinstance(request, dict):
                return error_reply(
                    BridgeError.INVALID_REQUEST,
                    "the request must be a JSON object",
                    'send an object such as {"op": "status"}',
                )
            raw_id = request.get("id")
            if isinstance(raw_id, str | int) and not isinstance(raw_id, bool):
                request_id = raw_id
            op = request.get("op")
            handler = self._ops.get(op) if isinstance(op, str) else None
            if handler is not None:
                self._ensure_backend()
            if handler is None:
                reply = error_reply(
                    BridgeError.UNKNOWN_OP,
                    "unknown or missing op",
                    f"use one of: {', '.join(self._ops)}",
                )
            else:
                reply = handler(request)
        except Exception as exc:  # the bridge must outlive any bug
            log.error("bridge_internal_error", error=type(exc).__name__)
            reply = error_reply(
                BridgeError.INTERNAL_ERROR,
                "the bridge failed on this request",
                "retry; if it persists, report it with the bridge's log",
            )
        if request_id is not None:
            reply = {"id": request_id, **reply}
        return reply

    def handle_bytes(self, raw: bytes) -> dict[str, Any]:
        """One request line as bytes: decoded as UTF-8 here, whatever the locale says, so
        invalid bytes are one ``INVALID_ENCODING`` reply and never an exception."""
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            return error_reply(
                BridgeError.INVALID_ENCODING,
                "the request line is not valid UTF-8",
                "encode every line as UTF-8",
            )
        return self.handle_line(line)

    def serve(self, lines_in: BinaryIO, lines_out: BinaryIO) -> int:
        """Answer every line until end of input, then flush and close the publisher.

        Reads and writes bytes (``sys.stdin.buffer``, ``sys.stdout.buffer``): decoding per
        line means one bad line costs that line only, and every earlier reply is already
        written and flushed.
        """
        try:
            for raw in read_lines(lines_in):
                if raw is None:
                    reply = error_reply(
                        BridgeError.INVALID_REQUEST,
                        "the request line is too long",
                        f"send at most {MAX_LINE_CHARS} characters per line",
                    )
                elif not raw.strip():
                    continue
                else:
                    reply = self.handle_bytes(raw)
                lines_out.write(encode_reply(reply))
                lines_out.flush()
        finally:
            self.close()
        return 0

    def close(self) -> None:
        """Deliver what is buffered (bounded wait) and stop the publisher."""
        if self._publisher is not None:
            self._publisher.close()

    def _ensure_backend(self) -> None:
        if self._publisher is not None or self._connect is None:
            return
        now = time.monotonic()
        if now - self._last_connect < RECONNECT_EVERY_S:
            return
        self._last_connect = now
        try:
            backend = self._connect()
        except Exception as exc:  # no backend yet: answer BACKEND_UNAVAILABLE, try later
            log.warning("bridge_connect_failed", error=type(exc).__name__)
            return
        if backend is not None:
            self._publisher = backend.publisher
            self._recaller = backend.recaller
            self._queue_status = backend.queue_status
            log.info("bridge_connected", endpoint=self._endpoint)

    # -- ops -----------------------------------------------------------------------------

    def build_event(self, raw: Any) -> TurnEvent:
        """A TurnEvent from the editor's fields, with raw scope keys hashed; raises
        ``ValidationError`` or ``ValueError``."""
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
        fields.setdefault("occurred_at", datetime.now(UTC).isoformat())
        return TurnEvent.model_validate(fields)

    def publish(self, request: dict[str, Any]) -> dict[str, Any]:
        """Op ``publish``: validate, hash, check consent, buffer (fire-and-forget)."""
        try:
            event = self.build_event(request.get("event"))
        except ValidationError as exc:
            return error_reply(
                BridgeError.INVALID_REQUEST,
                f"invalid turn event: {_invalid_fields(exc)}",
                "fix the named fields (see schemas/json/turn_event.schema.json)",
            )
        except ValueError as exc:
            return error_reply(
                BridgeError.INVALID_REQUEST,
                f"invalid turn event: {exc}",
                "send session_id, workspace and user as strings",
            )
        if not self._consent.is_enabled(event.workspace, self._endpoint):
            return error_reply(
                BridgeError.CONSENT_REQUIRED,
                "publishing is not enabled for this workspace",
                "run: turngraph consent enable --workspace <path>",
            )
        if self._publisher is None:
            return _backend_unavailable()
        buffered = self._publisher.publish(event)
        reply: dict[str, Any] = {"success": True, "event_id": event.event_id, "buffered": buffered}
        if not buffered:
            reply["dropped"] = "local_buffer_full"
        return reply

    def recall(self, request: dict[str, Any]) -> dict[str, Any]:
        """Op ``recall``: hash the scope keys and ask the recall workers (fails open)."""
        query = request.get("query")
        if not isinstance(query, str) or not query.strip():
            return error_reply(
                BridgeError.INVALID_REQUEST, "query must be a non-empty string", "send a query"
            )
        options: dict[str, Any] = {k: request[k] for k in _RECALL_OPTIONS if k in request}
        for name, hash_key in (
            ("session_id", self._hasher.session),
            ("workspace", self._hasher.workspace),
            ("user", self._hasher.user),
        ):
            value = request.get(name)
            if value is None:
                continue
            if not isinstance(value, str) or not value:
                return error_reply(
                    BridgeError.INVALID_REQUEST,
                    f"invalid recall request: {name}",
                    f"send {name} as a non-empty string",
                )
            options[name] = hash_key(value)
        if self._recaller is None:
            return _backend_unavailable()
        try:
            response = self._recaller.recall(query, **options)
        except (TypeError, ValueError, ValidationError):
            return error_reply(
                BridgeError.INVALID_REQUEST,
                "invalid recall options",
                "check the types of max_results, max_tokens, scopes and deadline_ms",
            )
        return response.model_dump(mode="json", exclude_none=True)

    def flush(self, request: dict[str, Any]) -> dict[str, Any]:
        """Op ``flush``: wait (bounded) until buffered events are answered by Redis."""
        timeout = request.get("timeout_s", DEFAULT_FLUSH_TIMEOUT_S)
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout < 0:
            return error_reply(
                BridgeError.INVALID_REQUEST, "timeout_s must be a number >= 0", "e.g. 2"
            )
        if self._publisher is None:
            return _backend_unavailable()
        if self._publisher.flush(min(float(timeout), 30.0)):
            return {"success": True, "pending": 0}
        reply = _backend_unavailable()
        reply["pending"] = self._publisher.pending
        return reply

    def status(self, request: dict[str, Any]) -> dict[str, Any]:
        """Op ``status``: this bridge's publisher counters and the shared queue counters."""
        reply: dict[str, Any] = {"success": True, "endpoint": self._endpoint}
        if self._publisher is not None:
            reply["publisher"] = self._publisher.stats().as_dict()
            reply["redis_available"] = self._publisher.redis_available
        else:
            reply["redis_available"] = False
        if self._queue_status is not None:
            try:
                reply["queue"] = dict(self._queue_status())
            except Exception as exc:  # status must answer even when Redis does not
                reply["queue"] = None
                reply["degraded"] = [f"queue_status_{type(exc).__name__}"]
        return reply


def read_lines(stream: BinaryIO) -> Iterator[bytes | None]:
    """Lines of ``stream`` as bytes; a line longer than ``MAX_LINE_BYTES`` is skipped to its
    end and yielded as None (bounded memory, and the next line is read intact)."""
    while True:
        raw = stream.readline(MAX_LINE_BYTES + 1)
        if not raw:
            return
        if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n"):
                raw = stream.readline(MAX_LINE_BYTES)
            yield None
            continue
        yield raw


def encode_reply(reply: dict[str, Any]) -> bytes:
    """One reply line: ASCII-only JSON (non-ASCII text is \\u-escaped), whatever the locale."""
    return (json.dumps(reply, ensure_ascii=True) + "\n").encode("ascii")


def _backend_unavailable() -> dict[str, Any]:
    return error_reply(
        BridgeError.BACKEND_UNAVAILABLE,
        "memory is unavailable right now",
        "start it with `turngraph up` (or check TURNGRAPH_REDIS_URL)",
    )
