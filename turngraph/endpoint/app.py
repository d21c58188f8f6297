"""The endpoint's routes (Starlette, served by uvicorn: both come with the MCP SDK).

``GET /v1/health`` (no token), ``POST /v1/hooks/{editor}/{event}`` (capture answered at
once, carried out after the reply), ``POST /v1/{op}`` (a bridge request) and ``/mcp``
(MCP over streamable HTTP, ``turngraph.endpoint.mcp``). Every route but health wants a
bearer token; a missing or wrong one is a 401 with the bridge's error contract.
docs/endpoint.md is the reference.
"""

from __future__ import annotations

import collections
import contextlib
import hmac
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.to_thread
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from turngraph.endpoint.hooks import HookEvents
from turngraph.endpoint.mcp import MCP_PATH, McpRoute
from turngraph.producers.operations import Operations, line_refusal
from turngraph.schemas.bridge import REQUEST_MODELS
from turngraph.schemas.bridge_common import error_reply
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.json_lines import MAX_LINE_BYTES, InvalidLineError, parse_line, too_long

__all__ = ["build_app"]

PROJECT_DIR_HEADER = "x-turngraph-project-dir"
"""Optional: the editor's project folder (what ``CLAUDE_PROJECT_DIR`` tells ``turngraph
hook``), for payloads that do not carry it."""

MAX_HOOK_BYTES = 4_000_000
"""A longer hook payload is not read (answered ``{}``, counted as a bad payload)."""


def _refusal(code: ErrorCode, message: str, remediation: str, status: int = 200) -> JSONResponse:
    body = error_reply(code, message, remediation).model_dump(mode="json", exclude_none=True)
    return JSONResponse(body, status_code=status)


McpFactory = Callable[[Callable[[Request], bool], Callable[[], Any]], McpRoute]
"""Builds the ``/mcp`` route from the endpoint's token check and its 401 reply."""


def build_app(
    operations: Operations, hooks: HookEvents, token: str, mcp: McpFactory | None = None
) -> Starlette:
    """The endpoint's application; ``token`` opens every route but health."""
    expected = f"Bearer {token}".encode()
    served: collections.Counter[str] = collections.Counter()

    def authorized(request: Request) -> bool:
        given = request.headers.get("authorization", "").encode("latin-1", "replace")
        return hmac.compare_digest(given, expected)

    def unauthorized() -> JSONResponse:
        return _refusal(
            ErrorCode.UNAUTHORIZED,
            "missing or wrong endpoint token",
            "send Authorization: Bearer <the token in the data folder's endpoint.token>",
            status=401,
        )

    mcp_app = mcp(authorized, unauthorized) if mcp is not None else None

    async def health(request: Request) -> Response:
        counts = dict(served)
        if mcp_app is not None and mcp_app.served:
            counts["mcp"] = mcp_app.served
        return JSONResponse({"ok": True, "served": counts})

    async def hook(request: Request) -> Response:
        if not authorized(request):
            return unauthorized()
        served["hooks"] += 1
        raw = await _body(request, MAX_HOOK_BYTES)
        reply, after = await anyio.to_thread.run_sync(
            lambda: hooks.answer(
                request.path_params["editor"],
                request.path_params["event"],
                raw or b"",
                project_dir=request.headers.get(PROJECT_DIR_HEADER),
            )
        )
        return JSONResponse(reply, background=BackgroundTask(after) if after else None)

    async def operation(request: Request) -> Response:
        if not authorized(request):
            return unauthorized()
        op = request.path_params["op"]
        if op not in REQUEST_MODELS:
            return _refusal(
                ErrorCode.UNKNOWN_OP,
                "unknown operation",
                f"POST to /v1/ and one of: {', '.join(REQUEST_MODELS)}",
                status=404,
            )
        served[op] += 1
        raw = await _body(request, MAX_LINE_BYTES)
        if raw is None:
            refused = too_long()
            return _refusal(ErrorCode.INVALID_REQUEST, refused.user_message, refused.remediation)
        try:
            request_object = parse_line(raw.decode("utf-8")) if raw.strip() else {}
        except UnicodeDecodeError:
            return _refusal(
                ErrorCode.INVALID_ENCODING,
                "the request body is not valid UTF-8",
                "encode the body as UTF-8",
            )
        except InvalidLineError as refused:
            return JSONResponse(line_refusal(refused, None))
        if not isinstance(request_object, dict):
            return _refusal(
                ErrorCode.INVALID_REQUEST,
                "the request body must be a JSON object",
                "send the op's fields as one object (schemas/json/bridge_<op>_request)",
            )
        request_object["op"] = op
        reply = await anyio.to_thread.run_sync(operations.handle_request, request_object)
        return JSONResponse(reply)

    routes = [
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/hooks/{editor}/{event}", hook, methods=["POST"]),
        Route("/v1/{op}", operation, methods=["POST"]),
    ]
    if mcp_app is None:
        return Starlette(routes=routes)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with mcp_app.lifespan():
            yield

    routes.append(Route(MCP_PATH, mcp_app, methods=["GET", "POST", "DELETE"]))
    return Starlette(routes=routes, lifespan=lifespan)


async def _body(request: Request, limit: int) -> bytes | None:
    """The request body, or None when it is longer than ``limit`` (not read further)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return b"".join(chunks)
