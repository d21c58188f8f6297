"""The CLI's fast path: one request to the running endpoint, standard library only.

``turngraph recall|publish|status`` ask :func:`find` first; with an endpoint named in
the data folder and alive they send their request here and print its reply, having
loaded neither pydantic, Redis, logging nor ``http.client``. Any failure to reach it is
:class:`EndpointUnavailable`, and the command takes its full code path instead.
"""

from __future__ import annotations

import json
import socket
from typing import Any
from urllib.parse import urlsplit

from turngraph.endpoint.files import LiveEndpoint, data_dir, read_live

__all__ = ["EndpointClient", "EndpointUnavailable", "find"]

CONNECT_TIMEOUT_S = 0.5
"""A local endpoint that does not accept a connection this fast is taken as away."""

MAX_REPLY_BYTES = 16_000_000
"""A longer reply is not an answer of ours."""


class EndpointUnavailable(Exception):
    """The endpoint could not be reached or did not answer with JSON."""


class EndpointClient:
    """Requests to one endpoint: HTTP/1.1 over a plain socket, one connection per request
    (``Connection: close``). ``http.client`` would cost more to import than the request
    takes (it loads the ``email`` parser)."""

    def __init__(self, live: LiveEndpoint) -> None:
        parts = urlsplit(live.url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self._token = live.token

    def call(self, op: str, body: dict[str, Any], timeout_s: float = 10.0) -> dict[str, Any]:
        """``POST /v1/<op>`` with ``body``; the reply object."""
        payload = json.dumps(body).encode("utf-8")
        head = (
            f"POST /v1/{op} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self._token}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(payload)}\r\nConnection: close\r\n\r\n"
        ).encode("latin-1")
        try:
            with socket.create_connection((self.host, self.port), CONNECT_TIMEOUT_S) as sock:
                sock.settimeout(timeout_s)
                sock.sendall(head + payload)
                chunks, size = [], 0
                while size <= MAX_REPLY_BYTES:
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
            header, _, data = b"".join(chunks).partition(b"\r\n\r\n")
            status = header.split(b"\r\n", 1)[0].split()
            if len(status) < 2 or status[1] != b"200":
                raise EndpointUnavailable(f"HTTP {status[1:2]!r}")
            if b"\r\ntransfer-encoding: chunked" in header.lower():
                raise EndpointUnavailable("a chunked reply")  # ours have a Content-Length
            reply = json.loads(data)
        except (OSError, ValueError, UnicodeError) as exc:
            raise EndpointUnavailable(type(exc).__name__) from None
        if not isinstance(reply, dict):
            raise EndpointUnavailable("not a JSON object")
        return reply


def find() -> EndpointClient | None:
    """A client of the endpoint the data folder names, if one is alive."""
    live = read_live(data_dir())
    return EndpointClient(live) if live is not None else None
