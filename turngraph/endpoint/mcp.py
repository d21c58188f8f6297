"""MCP over the endpoint's streamable HTTP transport (``/mcp``): the stdio server's tools
answered by the endpoint's warm operations, so an editor points at a URL instead of
spawning ``turngraph mcp``.

The SDK's own transport (``MCPServer.streamable_http_app``, DNS rebinding protection on
loopback) behind the endpoint's bearer token. Each request names its project folder in
``X-Turngraph-Project-Dir`` (:meth:`~turngraph.mcp_server.tools.MemoryTools.at`); each
MCP session is a session of its own for ``remember``.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from starlette.requests import Request
from starlette.types import Receive, Scope, Send

from turngraph.mcp_server.server import build_server
from turngraph.mcp_server.tools import MemoryTools, OperationsHandler
from turngraph.settings import Settings

__all__ = ["MCP_PATH", "McpRoute", "mcp_route"]

MCP_PATH = "/mcp"


class McpRoute:
    """The ASGI app at ``/mcp``: a request without the endpoint's token gets ``refuse``'s
    401, the others are counted and go to the SDK's transport; ``lifespan`` runs its
    session manager."""

    def __init__(
        self,
        transport: StreamableHTTPASGIApp,
        authorized: Callable[[Request], bool],
        refuse: Callable[[], Any],
        lifespan: Callable[[], contextlib.AbstractAsyncContextManager[None]],
    ) -> None:
        self._transport = transport
        self._authorized = authorized
        self._refuse = refuse
        self.lifespan = lifespan
        self.served = 0
        """Requests let through to the transport (``/v1/health``'s ``served.mcp``)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self._authorized(Request(scope)):
            await self._refuse()(scope, receive, send)
            return
        self.served += 1
        await self._transport(scope, receive, send)


def mcp_route(
    operations: OperationsHandler,
    settings: Settings,
    host: str,
    authorized: Callable[[Request], bool],
    refuse: Callable[[], Any],
) -> McpRoute:
    """The MCP server over ``operations`` at ``/mcp`` of an endpoint bound to ``host``."""

    def forget_scope(scope: Any, key: str) -> dict[str, object]:
        from turngraph.forgetting import forget

        return forget(settings, scope, key)

    tools = MemoryTools(
        bridge=operations,
        workspace="",  # each request names its own
        forget_scope=None if settings.tenant else forget_scope,
    )
    server = build_server(tools)
    server.streamable_http_app(streamable_http_path=MCP_PATH, host=host)
    manager = server.session_manager

    @contextlib.asynccontextmanager
    async def lifespan() -> AsyncIterator[None]:
        async with manager.run():
            yield

    return McpRoute(StreamableHTTPASGIApp(manager), authorized, refuse, lifespan)
