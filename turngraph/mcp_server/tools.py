"""What the MCP server's tools share: the bridge they answer through (built lazily), the
state behind them (:class:`MemoryTools`), a bridge reply as a tool result, and publishing a
turn that Redis has taken before the tool answers.

Used by ``turngraph.mcp_server.server`` (recall, remember, status, forget) and
``turngraph.mcp_server.distill`` (recap, summarize_recent, promote). No ``from __future__ import
annotations``: the SDK evaluates the tools' annotations.
"""

import getpass
import hashlib
import hmac
import itertools
import json
import secrets
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import anyio.to_thread
from mcp.types import CallToolResult, TextContent

from turngraph.schemas.bridge_common import error_reply
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.scopes import Scope
from turngraph.scope_keys import raw_workspace

__all__ = [
    "PROJECT_DIR_HEADER", "REMEMBER_FLUSH_S", "ForgetFn", "LazyOperations", "MemoryTools",
    "NoWorkspace", "OperationsHandler", "publish_and_flush", "server_version", "tool_result",
]  # fmt: skip

PROJECT_DIR_HEADER = "x-turngraph-project-dir"
"""Over HTTP, the request header naming the editor's project folder (the workspace)."""

SESSION_HEADER = "mcp-session-id"
"""The streamable HTTP transport's session id (the SDK's header)."""

REMEMBER_FLUSH_S = 2.0
"""``remember`` waits this long for Redis to take the turn before it answers."""

ForgetFn = Callable[[Scope, str], dict[str, Any]]
"""Deletes one scope (by raw key or id) and returns a JSON-able report."""


class OperationsHandler(Protocol):
    """What the tools need of :class:`producers.bridge.Bridge` (or a lazy holder of one)."""

    def handle_request(self, request: Any) -> dict[str, Any]: ...


class LazyOperations:
    """Builds the bridge (Redis client, publisher, recall and distill clients) on first use,
    so the server answers ``initialize`` before those libraries are loaded; ``warm_up``
    starts building it in the background."""

    def __init__(self, build: Callable[[], OperationsHandler]) -> None:
        self._build = build
        self._bridge: OperationsHandler | None = None
        self._lock = threading.Lock()

    def _get(self) -> OperationsHandler:
        with self._lock:
            if self._bridge is None:
                self._bridge = self._build()
            return self._bridge

    def warm_up(self) -> None:
        threading.Thread(target=self._warm, name="bridge-warm-up", daemon=True).start()

    def _warm(self) -> None:
        try:
            self._get()
        except Exception as exc:  # the first tool call builds it again and reports it
            import structlog

            structlog.get_logger(__name__).warning("bridge_not_built", error=type(exc).__name__)

    def handle_request(self, request: Any) -> dict[str, Any]:
        return self._get().handle_request(request)

    def close(self) -> None:
        """Close the bridge if it was built (what it buffered is delivered)."""
        with self._lock:
            bridge = self._bridge
        close = getattr(bridge, "close", None)
        if close is not None:
            close()


@dataclass
class MemoryTools:
    """The state behind the tools: one bridge core, the workspace this server serves, the
    user, and per-session turn counters for ``remember``."""

    bridge: OperationsHandler
    workspace: str
    user: str = field(default_factory=getpass.getuser)
    forget_scope: ForgetFn | None = None
    session_id: str = field(default_factory=lambda: f"mcp-{uuid.uuid4().hex}")
    _turns: dict[str, Iterator[int]] = field(default_factory=dict)
    _secret: bytes = field(default_factory=lambda: secrets.token_bytes(16))

    def at(self, headers: Mapping[str, str] | None) -> "MemoryTools":
        """The tools for one call. Over stdio (no headers): these. Over HTTP, one server
        answers every editor: the workspace is the folder the request names in
        ``X-Turngraph-Project-Dir`` (else this server's, if it has one), the session this
        MCP session's own; the turn counters are shared. Raises :class:`NoWorkspace` when
        neither names a workspace."""
        if headers is None:
            return self
        folder = headers.get(PROJECT_DIR_HEADER)
        workspace = raw_workspace(folder) if folder else self.workspace
        if not workspace:
            raise NoWorkspace()
        session = headers.get(SESSION_HEADER)
        return replace(
            self, workspace=workspace, session_id=f"mcp-{session}" if session else self.session_id
        )

    def next_turn(self, session_id: str) -> int:
        """The next turn index of ``session_id`` in this server's life."""
        return next(self._turns.setdefault(session_id, itertools.count()))

    def confirmation_token(self, scope: Scope, key: str) -> str:
        """A token the client must echo to confirm a forget (clients without elicitation)."""
        digest = hmac.new(self._secret, f"{scope.value}\x1f{key}".encode(), hashlib.sha256)
        return digest.hexdigest()[:12]

    async def call(self, request: dict[str, Any]) -> dict[str, Any]:
        """One bridge request, off the event loop (recall blocks up to its deadline)."""
        return await anyio.to_thread.run_sync(self.bridge.handle_request, request)


class NoWorkspace(Exception):
    """An HTTP request that names no workspace (answered as a typed tool failure)."""

    def reply(self) -> dict[str, Any]:
        return error_reply(
            ErrorCode.INVALID_REQUEST,
            "this MCP request names no workspace",
            "send the header X-Turngraph-Project-Dir: <the project folder> with every "
            "request (docs/endpoint.md, MCP over HTTP)",
        ).model_dump(mode="json", exclude_none=True)


def tool_result(reply: dict[str, Any], text: str | None = None) -> CallToolResult:
    """A bridge reply as a tool result: structured content, a readable text, and
    ``isError`` when the reply is a failure."""
    if text is None:
        if reply.get("success"):
            text = json.dumps(reply, indent=2)
        else:
            text = (
                f"{reply.get('error_code')}: {reply.get('user_message')} "
                f"({reply.get('remediation')})"
            )
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=reply,
        is_error=not reply.get("success", False),
    )


async def publish_and_flush(tools: MemoryTools, event: dict[str, Any]) -> dict[str, Any]:
    """Publish ``event`` through the bridge and wait (``REMEMBER_FLUSH_S``) until Redis has
    it: the publish reply (with ``event_id``), or the failure."""
    reply = await tools.call({"op": "publish", "event": event})
    if not reply.get("success"):
        return reply
    flushed = await tools.call({"op": "flush", "timeout_s": REMEMBER_FLUSH_S})
    if not flushed.get("success"):
        return {**flushed, "event_id": reply.get("event_id")}
    return reply


def server_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("turngraph")
    except PackageNotFoundError:
        return "0"
