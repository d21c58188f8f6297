"""``turngraph endpoint``: the always-warm local endpoint (docs/endpoint.md)."""

from __future__ import annotations

import argparse

__all__ = ["ENDPOINT_DESCRIPTION", "print_mcp_headers", "register", "run_endpoint"]

ENDPOINT_DESCRIPTION = """\
Serve hook events, recall, publish, status and the other bridge ops over HTTP on loopback,
with warm Redis connections (`turngraph up` runs it too). Where it listens is written to
<data folder>/endpoint.json; requests need the bearer token in <data folder>/endpoint.token
(made once, mode 600). Stops cleanly on SIGINT or SIGTERM.

MCP over streamable HTTP is at <url>/mcp: the stdio server's tools (`turngraph mcp`), with
the bearer token and the project folder in X-Turngraph-Project-Dir on every request.
`turngraph endpoint --mcp-headers` prints those headers as JSON (the project folder:
$CLAUDE_PROJECT_DIR, else the current folder), for an editor's headers helper (Claude
Code's `headersHelper`), so the token is written into no configuration.
"""


def print_mcp_headers() -> int:
    """The headers an MCP client sends to ``/mcp``, as one JSON object on stdout."""
    import json
    import os

    from turngraph.endpoint.files import data_dir, ensure_token

    folder = os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
    headers = {
        "Authorization": f"Bearer {ensure_token(data_dir())}",
        "X-Turngraph-Project-Dir": os.path.realpath(folder),
    }
    print(json.dumps(headers))
    return 0


def run_endpoint(args: argparse.Namespace) -> int:
    if args.mcp_headers:
        return print_mcp_headers()
    import os
    import sys

    from turngraph.endpoint.server import serve
    from turngraph.lifecycle import StopSignal
    from turngraph.logs import configure_logging
    from turngraph.settings import Settings

    settings = Settings()
    configure_logging(settings)
    try:
        serve(settings, host=args.host, port=args.port)
    except StopSignal as stopped:
        print(f"turngraph endpoint: stopped ({stopped})", file=sys.stderr, flush=True)
        sys.stdout.flush()
        # Everything is released by now (endpoint.json removed, the publisher closed and
        # its buffer delivered): the interpreter's own clean-up of the server's modules
        # took 1.8 s at load 25 (0.05 s without it) while a stopping `turngraph up`
        # waited for it.
        os._exit(0)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    endpoint = subparsers.add_parser(
        "endpoint",
        help="the always-warm local endpoint for hooks and the CLI (HTTP on loopback)",
        description=ENDPOINT_DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    endpoint.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    endpoint.add_argument(
        "--port", type=int, default=0, help="port to listen on (default 0: a free one)"
    )
    endpoint.add_argument(
        "--mcp-headers",
        action="store_true",
        help="print the headers for <url>/mcp as JSON and exit (an editor's headers helper)",
    )
    endpoint.set_defaults(handler=run_endpoint)
