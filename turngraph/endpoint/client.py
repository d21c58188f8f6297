"""The CLI's fast path: one request to the running endpoint, standard library only.

``turngraph recall|publish|status`` ask :func:`find` first; with an endpoint named in
the data folder and alive they send their request here and print its reply, having
loaded neither pydantic, Redis nor logging. Any failure to reach it is
:class:`EndpointUnavailable`, and the command takes its full code path instead.
"""

from __future__ import annotations

import http.client
import json
from typing import Any
from urllib.parse import urlsplit

from turngraph.endpoint.files import LiveEndpoint, data_dir, read_live

__all__ = ["EndpointClient", "EndpointUnavailable", "find"]

CONNECT_TIMEOUT_S = 0.5
"""A local endpoint that does not accept a connection this fast is taken as away."""


class EndpointUnavailable(Exception):
    """The endpoint could not be reached or did not answer with JSON."""


class EndpointClient:
    """Requests to one endpoint (a connection per request: one each, in the CLI)."""

    def __init__(self, live: LiveEndpoint) -> None:
        parts = urlsplit(live.url)
        self.host = parts.hostname or "127.0.0.1"
        self.port = parts.port or 80
        self._token = live.token

    def call(self, op: str, body: dict[str, Any], timeout_s: float = 10.0) -> dict[str, Any]:
        """``POST /v1/<op>`` with ``body``; the reply object."""
        connection = http.client.HTTPConnection(self.host, self.port, timeout=CONNECT_TIMEOUT_S)
        try:
            connection.connect()
            if connection.sock is not None:
                connection.sock.settimeout(timeout_s)
            connection.request(
                "POST",
                f"/v1/{op}",
                body=json.dumps(body).encode("utf-8"),
                headers={
                    "Authorization": f"Bearer {self._token}",
                    "Content-Type": "application/json",
                },
            )
            response = connection.getresponse()
            data = response.read()
            if response.status != 200:
                raise EndpointUnavailable(f"HTTP {response.status}")
            reply = json.loads(data)
        except (OSError, http.client.HTTPException, ValueError) as exc:
            raise EndpointUnavailable(type(exc).__name__) from None
        finally:
            connection.close()
        if not isinstance(reply, dict):
            raise EndpointUnavailable("not a JSON object")
        return reply


def find() -> EndpointClient | None:
    """A client of the endpoint the data folder names, if one is alive."""
    live = read_live(data_dir())
    return EndpointClient(live) if live is not None else None
