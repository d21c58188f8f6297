"""DistillClient: summaries, recaps, full summaries, promotion and the rolling context,
on demand. Waits at most the deadline and never raises (like :class:`RecallClient`)."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence
from typing import Any

import redis
import structlog
from pydantic import ValidationError

from turngraph.producers.request_reply import RequestFailed, ask, invalid_request, push_message
from turngraph.schemas.distill import (
    DEFAULT_DISTILL_DEADLINE_MS,
    DistillOp,
    DistillRequest,
    DistillResponse,
)
from turngraph.schemas.keys import DISTILL_REPLY_PREFIX, DISTILL_REQUESTS, ROLLING_CONTEXT_PREFIX
from turngraph.schemas.memories import PromotionKind
from turngraph.schemas.recap import RollingContext
from turngraph.schemas.validation import invalid_fields

__all__ = ["REQUEST_TTL_S", "DistillClient"]

log = structlog.get_logger(__name__)

REQUEST_TTL_S = 300
"""A request list nobody serves expires instead of growing without end."""


class DistillClient:
    """Pushes a :class:`DistillRequest` on the asks inbox and block-pops its reply (a
    maintenance job answers it); reads the rolling context straight from Redis."""

    def __init__(
        self,
        conn: redis.Redis,
        *,
        requests_key: str = DISTILL_REQUESTS,
        deadline_ms: int = DEFAULT_DISTILL_DEADLINE_MS,
        read_conn: redis.Redis | None = None,
    ) -> None:
        """``conn`` should have a socket timeout at least as long as ``deadline_ms`` (it
        waits for the answers); ``read_conn`` (default ``conn``), a short one: it reads
        the rolling context and pushes the requests, single round trips that a Redis
        accepting connections but not answering held for ``conn``'s timeout (121 s)."""
        self._redis = conn
        self._reads = read_conn if read_conn is not None else conn
        self._requests_key = requests_key
        self.deadline_ms = deadline_ms

    def summarize(self, session_id: str, last_n: int = 10, **options: Any) -> DistillResponse:
        """Summarize and store the session's last ``last_n`` turns (the seed's command);
        the reply carries the stored summary and its text."""
        return self._ask(DistillOp.SUMMARIZE, session_id=session_id, last_n=last_n, **options)

    def recap(
        self, session_id: str | None, budget_tokens: int = 1_000, **options: Any
    ) -> DistillResponse:
        """A recap of the session within ``budget_tokens`` (default 1000). With
        ``session_id`` None, of the previous session of ``workspace=`` (the latest one other
        than ``current_session_id=``)."""
        return self._ask(
            DistillOp.RECAP, session_id=session_id, budget_tokens=budget_tokens, **options
        )

    def full_summary(self, memory_id: str, **options: Any) -> DistillResponse:
        """The full stored summary (or decision record, or memory) behind a recall result's
        ``memory_id``: the seed's "show the full summary"."""
        return self._ask(DistillOp.SUMMARY, memory_id=memory_id, **options)

    def compact(self, workspace: str, topic_id: str, **options: Any) -> DistillResponse:
        """Merge a topic's summaries into its decision record now."""
        return self._ask(DistillOp.COMPACT, workspace=workspace, topic_id=topic_id, **options)

    def promote(
        self,
        kind: PromotionKind | str,
        text: str,
        *,
        user: str,
        workspace: str | None = None,
        scope: str = "workspace",
        session_id: str | None = None,
        source_event_ids: Sequence[str] = (),
        **options: Any,
    ) -> DistillResponse:
        """Keep ``text`` as a curated memory of ``kind`` in the workspace or user scope;
        refused (``REFUSED``) when it looks like a secret."""
        return self._ask(
            DistillOp.PROMOTE,
            kind=kind,
            text=text,
            user=user,
            workspace=workspace,
            scope=scope,
            session_id=session_id,
            source_event_ids=tuple(source_event_ids),
            **options,
        )

    def rolling_context(self, session_id: str) -> RollingContext | None:
        """The session's rolling context (last turns verbatim plus a rolling summary), as
        maintenance jobs keep it; None when there is none yet or Redis is away.
        ``.conversation_context()`` is ready for a recall request."""
        try:
            return self.read_rolling_context(session_id)
        except redis.RedisError as exc:
            log.warning("rolling_context_unavailable", error=type(exc).__name__)
            return None

    def read_rolling_context(self, session_id: str) -> RollingContext | None:
        """As :meth:`rolling_context`, but a Redis failure raises ``redis.RedisError`` (so a
        caller can tell "none yet" from "memory unavailable")."""
        raw: Any = self._reads.get(ROLLING_CONTEXT_PREFIX + session_id)
        if raw is None:
            return None
        try:
            return RollingContext.model_validate_json(raw)
        except ValidationError:
            log.warning("rolling_context_unreadable")
            return None

    def _ask(self, op: DistillOp, **fields: Any) -> DistillResponse:
        request_id = uuid.uuid4().hex
        deadline_ms = fields.pop("deadline_ms", None) or self.deadline_ms
        try:
            request = DistillRequest(
                request_id=request_id,
                reply_to=DISTILL_REPLY_PREFIX + request_id,
                op=op,
                deadline_ms=deadline_ms,
                sent_at_ms=int(time.time() * 1000),
                **fields,
            )
        except ValidationError as exc:
            wrong = invalid_fields(exc, "request")
            return invalid_request(DistillResponse, request_id, op.value, wrong)
        return self.send(request)

    def send(self, request: DistillRequest) -> DistillResponse:
        """Send a prepared request (``reply_to`` set) and wait for the answer."""
        try:
            return ask(
                self._redis,
                self._requests_key,
                request,
                DistillResponse,
                request_ttl_s=REQUEST_TTL_S,
                server="a maintenance worker",
                push=lambda: push_message(self._reads, self._requests_key, request, REQUEST_TTL_S),
            )
        except RequestFailed as exc:
            return DistillResponse.failure(
                request.request_id, exc.code, exc.user_message, exc.remediation
            )
