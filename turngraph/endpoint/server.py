"""``turngraph endpoint``: the endpoint served on loopback until a stop signal.

Binds first (by default the port it had last time when that is free, else a free one),
names itself in ``endpoint.json`` once it listens, and
removes that file when it stops. Its :class:`~turngraph.producers.operations.Operations`
keeps the publisher, recall and distill clients warm for every request.
"""

from __future__ import annotations

import os
import socket

import structlog
import uvicorn

from turngraph.clients import build_operations
from turngraph.endpoint.app import build_app
from turngraph.endpoint.files import ensure_token, remembered_port, remove_endpoint, write_endpoint
from turngraph.endpoint.hooks import HookEvents
from turngraph.endpoint.mcp import mcp_route
from turngraph.settings import Settings

__all__ = ["DEFAULT_HOST", "serve"]

log = structlog.get_logger(__name__)

DEFAULT_HOST = "127.0.0.1"


def _bind(host: str, port: int, remembered: int | None) -> socket.socket:
    """A listening socket on ``port``; with port 0, on ``remembered`` when it is free,
    else on a free port."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    for candidate in ([remembered] if port == 0 and remembered else []) + [port]:
        sock = socket.socket(family)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, candidate))
        except OSError:
            sock.close()
            if candidate != port:
                continue
            raise
        sock.listen(128)
        return sock
    raise AssertionError("unreachable: the last candidate binds or raises")


def serve(settings: Settings, *, host: str = DEFAULT_HOST, port: int = 0) -> None:
    """Serve until a stop signal (uvicorn's: SIGINT or SIGTERM end it cleanly). ``port``
    0: the port of the previous run when it is free, else a free one."""
    token = ensure_token(settings.data_dir)
    operations = build_operations(settings)
    operations.backend.ensure()  # warm: connect now rather than on the first request
    sock = _bind(host, port, remembered_port(settings.data_dir))
    bound_host, bound_port = sock.getsockname()[:2]
    app = build_app(
        operations,
        HookEvents(settings, operations),
        token,
        mcp=lambda authorized, refuse: mcp_route(
            operations, settings, bound_host, authorized, refuse
        ),
    )
    url = f"http://{f'[{bound_host}]' if ':' in bound_host else bound_host}:{bound_port}"
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_config=None, access_log=False, lifespan="on", timeout_graceful_shutdown=5
        )
    )
    pid = os.getpid()
    write_endpoint(settings.data_dir, url, pid, bound_port)
    log.info("endpoint_listening", url=url)
    try:
        server.run(sockets=[sock])
    finally:
        remove_endpoint(settings.data_dir, pid)
        operations.close()
        sock.close()
