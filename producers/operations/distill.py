"""The bridge's distilled-memory ops: summarize, recap, summary, promote, context.

:class:`DistillOps` answers them for :class:`producers.operations.Operations` (so ``turngraph
bridge`` and ``turngraph mcp`` share one behaviour): raw scope keys hashed, ``promote``
checked for consent and for secret-looking text *before* anything leaves this machine,
the maintenance worker asked through :class:`producers.distill_client.DistillClient`
within the request's deadline (clamped and reported), and its typed failures turned into
the bridge's error contract. ``context`` reads the rolling context straight from Redis.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

import redis
import structlog
from pydantic import BaseModel

from turngraph.producers.consent import ConsentStore, enable_command
from turngraph.producers.redaction import looks_secret
from turngraph.producers.request_reply import TENANT_LIMIT_FIX, NotPermitted
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.bridge_common import Clamped, ErrorReply
from turngraph.schemas.bridge_distill import (
    MAX_DISTILL_DEADLINE_MS,
    MIN_DISTILL_DEADLINE_MS,
    ContextReply,
    ContextRequest,
    PromoteReply,
    PromoteRequest,
    RecapReply,
    RecapRequest,
    SummarizeReply,
    SummarizeRequest,
    SummaryReply,
    SummaryRequest,
)
from turngraph.schemas.distill import DistillResponse
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.recall import ConversationTurn
from turngraph.schemas.recap import RollingContext

__all__ = ["DistillBackend", "DistillOps", "secret_refusal", "unavailable"]

log = structlog.get_logger(__name__)


class DistillBackend(Protocol):
    """What the ops need from :class:`producers.distill_client.DistillClient`."""

    def summarize(self, session_id: str, last_n: int = 10, **options: Any) -> DistillResponse:
        """Summarize and store the session's last turns."""
        ...

    def recap(
        self, session_id: str | None, budget_tokens: int = 1_000, **options: Any
    ) -> DistillResponse:
        """A recap of the session (or the previous one of ``workspace=``)."""
        ...

    def full_summary(self, memory_id: str, **options: Any) -> DistillResponse:
        """The full stored summary, record or memory."""
        ...

    def promote(self, kind: Any, text: str, *, user: str, **options: Any) -> DistillResponse:
        """Keep a curated memory."""
        ...

    def read_rolling_context(self, session_id: str) -> RollingContext | None:
        """The rolling context; raises ``redis.RedisError`` when Redis is away."""
        ...


def secret_refusal() -> ErrorReply:
    """``promote``'s refusal of secret-looking text (never quotes it)."""
    return ErrorReply(
        error_code=ErrorCode.REFUSED,
        user_message="refused: the text looks like a secret",
        remediation="remove the credential and promote again",
    )


def unavailable() -> ErrorReply:
    return ErrorReply(
        error_code=ErrorCode.BACKEND_UNAVAILABLE,
        user_message="memory is unavailable right now",
        remediation="start it with `turngraph up` (or check TURNGRAPH_REDIS_URL)",
    )


def _clamp_deadline(requested: int | None) -> tuple[dict[str, Any], dict[str, Clamped] | None]:
    """The client options for a deadline, and ``clamped`` when it was out of range."""
    if requested is None:
        return {}, None
    used = min(max(requested, MIN_DISTILL_DEADLINE_MS), MAX_DISTILL_DEADLINE_MS)
    clamped = (
        {"deadline_ms": Clamped(requested=requested, used=used)} if used != requested else None
    )
    return {"deadline_ms": used}, clamped


def _incomplete() -> ErrorReply:
    return ErrorReply(
        error_code=ErrorCode.INTERNAL_ERROR,
        user_message="memory sent an incomplete answer",
        remediation="check that producers and workers run the same version",
    )


def _failure(response: DistillResponse) -> ErrorReply:
    code = response.error_code or ErrorCode.INTERNAL_ERROR
    return ErrorReply(
        error_code=code,
        user_message=response.user_message or "memory could not answer",
        remediation=response.remediation or "retry",
    )


class DistillOps:
    """The five ops; ``backend()`` gives the client once a Redis endpoint is known."""

    def __init__(
        self,
        *,
        hasher: ScopeHasher,
        consent: ConsentStore,
        endpoint: str,
        backend: Callable[[], DistillBackend | None],
    ) -> None:
        self._hasher = hasher
        self._consent = consent
        self._endpoint = endpoint
        self._backend = backend

    def ops(self) -> dict[str, Callable[[Any], BaseModel]]:
        """Op name -> handler, for the bridge's dispatch table."""
        return {
            "summarize": self.summarize,
            "recap": self.recap,
            "summary": self.summary,
            "promote": self.promote,
            "context": self.context,
        }

    def _ask(
        self,
        deadline_ms: int | None,
        ask: Callable[[DistillBackend, dict[str, Any]], DistillResponse],
        answer: Callable[[DistillResponse], BaseModel],
    ) -> BaseModel:
        options, clamped = _clamp_deadline(deadline_ms)
        backend = self._backend()
        reply: BaseModel
        if backend is None:
            reply = unavailable()
        else:
            response = ask(backend, options)
            reply = answer(response) if response.success else _failure(response)
        return reply.model_copy(update={"clamped": clamped}) if clamped else reply

    def summarize(self, request: SummarizeRequest) -> BaseModel:
        """Op ``summarize``: summarize and store the session's last ``last_n`` turns."""
        session = self._hasher.session(request.session_id)

        def answer(response: DistillResponse) -> BaseModel:
            if response.summary is None:
                return _incomplete()
            return SummarizeReply(text=response.text, summary=response.summary)

        return self._ask(
            request.deadline_ms,
            lambda backend, options: backend.summarize(session, request.last_n, **options),
            answer,
        )

    def recap(self, request: RecapRequest) -> BaseModel:
        """Op ``recap``: the session's recap, by default the workspace's previous session."""
        session = self._hasher.session(request.session_id) if request.session_id else None
        current = (
            self._hasher.session(request.current_session_id) if request.current_session_id else None
        )
        workspace = self._hasher.workspace(request.workspace)

        def answer(response: DistillResponse) -> BaseModel:
            if response.recap is None:
                return _incomplete()
            return RecapReply(
                session_id=response.recap.session_id, text=response.text, recap=response.recap
            )

        return self._ask(
            request.deadline_ms,
            lambda backend, options: backend.recap(
                session,
                request.budget_tokens,
                workspace=workspace,
                current_session_id=current,
                **options,
            ),
            answer,
        )

    def summary(self, request: SummaryRequest) -> BaseModel:
        """Op ``summary``: the full stored summary, decision record or memory."""

        def answer(response: DistillResponse) -> BaseModel:
            kind = (
                "summary"
                if response.summary is not None
                else "decision_record"
                if response.record is not None
                else "memory"
            )
            return SummaryReply(
                kind=kind, text=response.text, summary=response.summary, record=response.record
            )

        return self._ask(
            request.deadline_ms,
            lambda backend, options: backend.full_summary(request.memory_id, **options),
            answer,
        )

    def promote(self, request: PromoteRequest) -> BaseModel:
        """Op ``promote``: refused when the text looks like a secret (checked here, before
        it leaves), or without consent for the workspace."""
        if looks_secret(request.text):
            log.warning("bridge_promotion_refused_secret", kind=request.kind)
            return secret_refusal()
        workspace = self._hasher.workspace(request.workspace)
        if not self._consent.is_enabled(workspace, self._endpoint):
            return ErrorReply(
                error_code=ErrorCode.CONSENT_REQUIRED,
                user_message="promoting is not enabled for this workspace",
                remediation=enable_command(request.workspace),
            )
        user = self._hasher.user(request.user)
        session = self._hasher.session(request.session_id)

        def answer(response: DistillResponse) -> BaseModel:
            if response.memory is None:
                return _incomplete()
            return PromoteReply(text=response.text, memory=response.memory)

        return self._ask(
            request.deadline_ms,
            lambda backend, options: backend.promote(
                request.kind,
                request.text,
                user=user,
                workspace=workspace,
                scope=request.scope,
                session_id=session,
                source_event_ids=request.source_event_ids,
                **options,
            ),
            answer,
        )

    def context(self, request: ContextRequest) -> BaseModel:
        """Op ``context``: the session's rolling context (``available`` False until
        maintenance has seen the session)."""
        backend = self._backend()
        if backend is None:
            return unavailable()
        try:
            rolling = backend.read_rolling_context(self._hasher.session(request.session_id))
        except redis.exceptions.NoPermissionError:
            return ErrorReply(
                error_code=ErrorCode.NOT_AVAILABLE,
                user_message=NotPermitted.user_message,
                remediation=TENANT_LIMIT_FIX,
            )
        except redis.RedisError as exc:
            log.warning("bridge_context_unavailable", error=type(exc).__name__)
            return unavailable()
        if rolling is None:
            return ContextReply(available=False)
        return ContextReply(
            available=True,
            conversation_context=[
                ConversationTurn.model_validate(turn) for turn in rolling.conversation_context()
            ],
            summary=rolling.summary,
            summarized_through=rolling.summarized_through,
            recent=list(rolling.recent),
            tokens=rolling.tokens,
            updated_at=rolling.updated_at,
        )
