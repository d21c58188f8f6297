"""RecallClient: ask the recall workers, wait at most the deadline, never raise."""

from __future__ import annotations

import time
import uuid
from collections.abc import Sequence

import redis
import structlog
from pydantic import ValidationError

from turngraph.producers.request_reply import RequestFailed, ask, invalid_request, push_message
from turngraph.producers.shard_push import push_if_served
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.keys import RECALL_REPLY_PREFIX, RECALL_REQUESTS
from turngraph.schemas.recall import (
    DEFAULT_DEADLINE_MS,
    ConversationTurn,
    RecallRequest,
    RecallResponse,
)
from turngraph.schemas.scopes import ScopeName
from turngraph.schemas.shards import NO_REPLICA, request_shard, shard_requests_key
from turngraph.schemas.tenants import qualify, recall_reply_prefix, recall_requests_key
from turngraph.schemas.validation import invalid_fields

__all__ = ["REQUEST_TTL_S", "SERVER", "NoReplica", "RecallClient"]

log = structlog.get_logger(__name__)

REQUEST_TTL_S = 60
"""A request list nobody serves expires instead of growing without end."""

SERVER = "a recall worker"
"""What answers, as remediations name it."""


class RecallClient:
    """Pushes a :class:`RecallRequest` and block-pops its per-request reply key.

    Fails open: past the deadline, or with Redis unreachable, it returns an empty
    response flagged ``degraded`` instead of raising, so a chat never breaks on memory.
    A producer holding a tenant credential uses :meth:`for_tenant` (the tenant's request
    list and reply keys: the only ones it may touch).
    """

    def __init__(
        self,
        conn: redis.Redis,
        *,
        requests_key: str = RECALL_REQUESTS,
        reply_prefix: str = RECALL_REPLY_PREFIX,
        deadline_ms: int = DEFAULT_DEADLINE_MS,
        shards: int = 1,
        tenant: str | None = None,
        push_conn: redis.Redis | None = None,
    ) -> None:
        """``conn`` should have a socket timeout at least as long as ``deadline_ms`` (it
        waits for the answer); per-request reply keys are ``reply_prefix`` plus the
        request id. ``shards``: the deployment's recall shard count
        (``TURNGRAPH_RECALL_SHARDS``; docs/scaling.md): a request goes to its workspace's
        shard, and fails at once when no replica serves that shard. ``push_conn``
        (default ``conn``) sends the request: give it a socket timeout of at most the
        deadline, so a Redis that accepts connections but does not answer (paused,
        swapping) fails the recall at its deadline, not at ``conn``'s longer timeout."""
        self._redis = conn
        self._pushes = push_conn if push_conn is not None else conn
        self._requests_key = requests_key
        self._reply_prefix = reply_prefix
        self.deadline_ms = deadline_ms
        self.shards = shards
        self._tenant = tenant
        self._window_refused = False
        """A recall worker refused ``window_from_turn`` (one older than the field): later
        requests go without it."""

    @classmethod
    def for_tenant(
        cls,
        conn: redis.Redis,
        tenant: str,
        *,
        deadline_ms: int = DEFAULT_DEADLINE_MS,
        shards: int = 1,
        push_conn: redis.Redis | None = None,
    ) -> RecallClient:
        """A client on ``tenant``'s request list and reply keys (``conn`` carries the
        tenant's credential); the recall worker answers from that tenant's scopes only."""
        return cls(
            conn,
            requests_key=recall_requests_key(tenant),
            reply_prefix=recall_reply_prefix(tenant),
            deadline_ms=deadline_ms,
            shards=shards,
            tenant=tenant,
            push_conn=push_conn,
        )

    def _shard(self, request: RecallRequest) -> int:
        """The request's shard, from its scope keys as the replicas store them."""
        workspace, user = request.workspace, request.user
        if self._tenant is not None:
            workspace = qualify(self._tenant, workspace) if workspace else None
            user = qualify(self._tenant, user) if user else None
        return request_shard(workspace, user, self.shards)

    def recall(
        self,
        query: str,
        *,
        session_id: str | None = None,
        workspace: str | None = None,
        user: str | None = None,
        scopes: Sequence[ScopeName | str] = (ScopeName.AUTO,),
        conversation_context: Sequence[ConversationTurn | dict[str, str]] = (),
        max_results: int = 5,
        max_tokens: int = 1_000,
        half_life_days: float = 14.0,
        include_superseded: bool = False,
        deadline_ms: int | None = None,
        window_from_turn: int | None = None,
    ) -> RecallResponse:
        """Search the memory; returns within ``deadline_ms`` (default: the client's).
        ``window_from_turn``: the current session's turns from this index on are in the
        caller's window (an editor's transcript since its last compaction) and are left
        out; a recall worker older than that field refuses it, and the request goes again
        without it (with what is left of the deadline), as do this client's later ones."""
        request_id = uuid.uuid4().hex
        try:
            request = RecallRequest(
                request_id=request_id,
                reply_to=self._reply_prefix + request_id,
                query=query,
                session_id=session_id,
                workspace=workspace,
                user=user,
                scopes=tuple(ScopeName(scope) for scope in scopes),
                conversation_context=tuple(
                    ConversationTurn.model_validate(turn) for turn in conversation_context
                ),
                max_results=max_results,
                max_tokens=max_tokens,
                window_from_turn=window_from_turn,
                half_life_days=half_life_days,
                include_superseded=include_superseded,
                deadline_ms=deadline_ms or self.deadline_ms,
            )
        except (ValidationError, ValueError) as exc:
            fields = (
                invalid_fields(exc, "request") if isinstance(exc, ValidationError) else ["scopes"]
            )
            return invalid_request(RecallResponse, request_id, "recall", fields)
        started = time.monotonic()
        if window_from_turn is None or not self._window_refused:
            response = self.send(request)
            if window_from_turn is None or not _refuses_window(response):
                return response
            self._window_refused = True
            log.info("recall_window_not_known", remediation="upgrade the recall workers")
        spent_ms = int((time.monotonic() - started) * 1000)
        return self.send(_without_window(request, self._reply_prefix, spent_ms))

    def send(self, request: RecallRequest) -> RecallResponse:
        """Send a prepared request (its ``reply_to`` must be set) and wait for the answer."""
        started = time.monotonic()
        request = request.model_copy(update={"sent_at_ms": int(time.time() * 1000)})
        shard = self._shard(request)
        requests_key = shard_requests_key(self._requests_key, shard, self.shards)

        def push() -> None:
            if self.shards <= 1:
                push_message(self._pushes, requests_key, request, REQUEST_TTL_S)
                return
            payload = request.model_dump_json()
            if not push_if_served(self._pushes, shard, requests_key, payload, REQUEST_TTL_S):
                log.warning("recall_shard_unavailable", request_id=request.request_id, shard=shard)
                raise NoReplica(shard)

        try:
            return ask(
                self._redis,
                requests_key,
                request,
                RecallResponse,
                request_ttl_s=REQUEST_TTL_S,
                server=SERVER,
                started=started,
                push=push,
            )
        except RequestFailed as exc:
            return RecallResponse.failure(
                request.request_id,
                exc.code,
                exc.user_message,
                exc.remediation,
                degraded=[exc.reason],
            )


def _refuses_window(response: RecallResponse) -> bool:
    """Whether ``response`` is a recall worker's refusal of ``window_from_turn`` (one older
    than the field answers ``invalid recall request: window_from_turn``)."""
    return response.error_code == ErrorCode.INVALID_REQUEST and "window_from_turn" in (
        response.user_message or ""
    )


def _without_window(request: RecallRequest, reply_prefix: str, spent_ms: int) -> RecallRequest:
    """``request`` as a new one without ``window_from_turn`` (left out of its JSON), with
    what is left of its deadline after ``spent_ms``."""
    request_id = uuid.uuid4().hex
    return request.model_copy(update={
        "window_from_turn": None, "request_id": request_id, "reply_to": reply_prefix + request_id,
        "deadline_ms": max(1, request.deadline_ms - spent_ms),
    })  # fmt: skip


class NoReplica(RequestFailed):
    """The deployment is sharded and no live replica serves the request's shard."""

    code = ErrorCode.BACKEND_UNAVAILABLE
    reason = NO_REPLICA
    fix = "start a recall replica for that shard (TURNGRAPH_RECALL_REPLICA_SHARDS)"

    def __init__(self, shard: int) -> None:
        self.user_message = f"no recall replica serves shard {shard} right now"
        super().__init__(SERVER)
