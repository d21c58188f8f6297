"""The MCP server's stdio transport, with every line read defensively.

The SDK's own transport hands a line it cannot validate to the server as an exception,
which answers nothing (the client waits for ever). Here each line is screened first
(``schemas.json_lines``, then the JSON-RPC shape and the tool's argument names) and one
that fails gets a JSON-RPC error at once; lines that pass go to the SDK unchanged.
docs/editors.md ("MCP server").
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Iterator
from typing import Any, BinaryIO

import anyio
import anyio.to_thread
import mcp_types
import structlog
from mcp.server.mcpserver import MCPServer
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, INVALID_REQUEST, PARSE_ERROR  # JSON-RPC 2.0's

from turngraph.producers.bridge_io import LongLine, read_lines
from turngraph.schemas.json_lines import InvalidLineError, parse_line, request_id, too_long

__all__ = ["MAX_NAMES_SHOWN", "Refused", "ScreenedStdin", "error_message", "screen", "serve_stdio"]

log = structlog.get_logger(__name__)

MAX_NAMES_SHOWN = 5
"""At most this many unknown argument names are named in an error (each cut to 40)."""


class Refused(Exception):
    """A line that gets a JSON-RPC error instead of reaching the server."""

    def __init__(self, code: int, message: str, request_id: str | int | None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id


def screen(text: str, tool_arguments: dict[str, set[str]]) -> None:
    """Raise :class:`Refused` for a line the server must not see; return for a good one.

    ``tool_arguments``: each tool's argument names (unknown ones are refused)."""
    try:
        message = parse_line(text)
    except InvalidLineError as refused:
        code = PARSE_ERROR if refused.reason == "not_json" else INVALID_REQUEST
        raise Refused(code, refused.user_message, request_id(text)) from None
    if not isinstance(message, dict):
        raise Refused(INVALID_REQUEST, "a message must be one JSON object (no batches)", None)
    raw_id = message.get("id")
    if "id" in message and (not isinstance(raw_id, str | int) or isinstance(raw_id, bool)):
        raise Refused(INVALID_REQUEST, "id must be a string or an integer", None)
    own_id = raw_id if isinstance(raw_id, str | int) else None
    if message.get("jsonrpc") != "2.0":
        raise Refused(INVALID_REQUEST, 'not JSON-RPC 2.0: set "jsonrpc": "2.0"', own_id)
    method = message.get("method")
    if "method" in message and not isinstance(method, str):
        raise Refused(INVALID_REQUEST, "method must be a string", own_id)
    if method == "tools/call":
        _check_arguments(message.get("params"), tool_arguments, own_id)
    try:
        mcp_types.jsonrpc_message_adapter.validate_json(text, by_name=False)
    except ValueError:
        raise Refused(
            INVALID_REQUEST, "not a valid JSON-RPC request, notification or response", own_id
        ) from None


def _check_arguments(params: Any, tool_arguments: dict[str, set[str]], own_id: Any) -> None:
    if not isinstance(params, dict):
        raise Refused(INVALID_PARAMS, "tools/call needs params with the tool's name", own_id)
    name, arguments = params.get("name"), params.get("arguments")
    if not isinstance(name, str) or name not in tool_arguments:
        return  # the server answers an unknown tool itself
    if arguments is None:
        return
    if not isinstance(arguments, dict):
        raise Refused(INVALID_PARAMS, f"arguments of {name} must be an object", own_id)
    unknown = sorted(set(arguments) - tool_arguments[name])
    if unknown:
        shown = ", ".join(key[:40] for key in unknown[:MAX_NAMES_SHOWN])
        more = (
            f" and {len(unknown) - MAX_NAMES_SHOWN} more" if len(unknown) > MAX_NAMES_SHOWN else ""
        )
        takes = ", ".join(sorted(tool_arguments[name])) or "no arguments"
        raise Refused(
            INVALID_PARAMS, f"{name} has no argument {shown}{more}; it takes: {takes}", own_id
        )


def error_message(refused: Refused) -> SessionMessage:
    return SessionMessage(
        mcp_types.JSONRPCError(
            jsonrpc="2.0",
            id=refused.request_id,
            error=mcp_types.ErrorData(code=refused.code, message=refused.message),
        )
    )


def _refusal_of(raw: bytes | LongLine, tool_arguments: dict[str, set[str]]) -> Refused | None:
    if isinstance(raw, LongLine):
        return Refused(
            INVALID_REQUEST,
            too_long().user_message,
            request_id(raw.head.decode("utf-8", "replace")),
        )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return Refused(
            PARSE_ERROR, "the line is not valid UTF-8", request_id(raw.decode("utf-8", "replace"))
        )
    if not text.strip():
        return None
    try:
        screen(text, tool_arguments)
    except Refused as refused:
        return refused
    return None


class ScreenedStdin:
    """Async lines for the SDK's transport: the good ones; the others answered here."""

    def __init__(self, stream: BinaryIO, tool_arguments: dict[str, set[str]]) -> None:
        self._lines: Iterator[bytes | LongLine] = read_lines(stream)
        self._tool_arguments = tool_arguments
        self._writer: Any = None
        self._attached = anyio.Event()

    def attach(self, write_stream: Any) -> None:
        """Where refusals go: the transport's writer, so replies never interleave."""
        self._writer = write_stream
        self._attached.set()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._good_lines()

    async def _good_lines(self) -> AsyncIterator[str]:
        while True:
            raw = await anyio.to_thread.run_sync(next, self._lines, None, abandon_on_cancel=True)
            if raw is None:
                return
            refused = _refusal_of(raw, self._tool_arguments)
            if refused is None:
                if isinstance(raw, bytes) and raw.strip():
                    yield raw.decode("utf-8")
                continue
            log.info("mcp_message_refused", code=refused.code)
            await self._attached.wait()
            await self._writer.send(error_message(refused))


async def serve_stdio(server: MCPServer) -> None:
    """``server`` on stdin and stdout, every malformed line answered."""
    tool_arguments = {
        tool.name: set((tool.input_schema or {}).get("properties", {}))
        for tool in await server.list_tools()
    }
    stdin = ScreenedStdin(sys.stdin.buffer, tool_arguments)
    async with stdio_server(stdin=stdin) as (read_stream, write_stream):  # type: ignore[arg-type]
        stdin.attach(write_stream)
        # MCPServer.run_stdio_async without the SDK's own stdin reader; the low-level
        # server is the SDK's public Server class, MCPServer only keeps it private.
        lowlevel = server._lowlevel_server
        await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
