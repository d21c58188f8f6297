"""``turngraph mcp``: the memory as an MCP server on stdio (``turngraph.mcp_server``)."""

from __future__ import annotations

import argparse
import getpass
import os
from typing import Any

__all__ = ["MCP_DESCRIPTION", "register", "run_mcp"]

MCP_DESCRIPTION = """\
Serve the memory to an MCP client (VS Code, Cursor, Claude Code, Zed...) over stdio.

Tools: recall, remember, status, forget (asks the user to confirm), and, answered by a
maintenance worker, recap (default: the previous session of the workspace),
summarize_recent and promote (refuses secret-looking text). Consent, scope hashing and the
fail-open deadlines are the bridge's (`turngraph bridge --help`).
Logs go to stderr; stdout carries only the protocol.
"""


def run_mcp(args: argparse.Namespace) -> int:
    from functools import partial

    import anyio

    from turngraph.lifecycle import exit_on_signals
    from turngraph.logs import configure_logging
    from turngraph.mcp_server.server import build_server
    from turngraph.mcp_server.stdio import serve_stdio
    from turngraph.mcp_server.tools import LazyOperations, MemoryTools
    from turngraph.schemas.scopes import Scope
    from turngraph.scope_keys import raw_workspace
    from turngraph.settings import Settings

    settings = Settings()

    def build() -> Any:
        # Redis, the drivers and the redaction rules load here, after `initialize` could
        # be answered (`python -m bench.startup`)
        from turngraph.clients import build_operations

        return build_operations(settings, deadline_ms=args.deadline_ms)

    bridge = LazyOperations(build)

    def forget_scope(scope: Scope, key: str) -> dict[str, object]:
        from turngraph.forgetting import forget

        return partial(forget, settings)(scope, key)

    tools = MemoryTools(
        bridge=bridge,
        workspace=raw_workspace(args.workspace or os.getcwd()),
        user=args.user,
        # forget is an operator command; a tenant's producer asks the operator
        forget_scope=None if settings.tenant else forget_scope,
    )
    server = build_server(tools)
    configure_logging(settings)  # after the SDK's own set-up: ours wins, on stderr
    bridge.warm_up()
    # SIGTERM and SIGINT alike (even when SIGINT came in ignored): deliver what is
    # buffered, then exit; the SDK's stdin thread would otherwise hold the process.
    exit_on_signals(bridge.close)
    try:
        anyio.run(serve_stdio, server)  # the SDK's stdio transport, lines screened first
    finally:
        bridge.close()
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    mcp = subparsers.add_parser(
        "mcp",
        help="MCP server on stdio for editors (recall, remember, recap, promote, forget...)",
        description=MCP_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    mcp.add_argument(
        "--workspace",
        help="the workspace folder this server remembers for (default: the current "
        "folder; editors pass their project folder, e.g. ${workspaceFolder})",
    )
    mcp.add_argument(
        "--user",
        default=getpass.getuser(),
        help="the user key (hashed before it leaves; default: your login name)",
    )
    mcp.add_argument(
        "--deadline-ms",
        type=int,
        default=None,
        help="how long recall waits before it fails open (default 750)",
    )
    mcp.set_defaults(handler=run_mcp)
