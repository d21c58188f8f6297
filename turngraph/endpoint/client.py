"""The CLI's fast path: one request to the running endpoint, standard library only.

``turngraph recall|publish|status`` ask :func:`find` first and, with an endpoint alive,
send their request through the hook forwarder's sender
(``turngraph.producers.hooks.forward.post``) without loading pydantic, Redis or logging.
Any failure to reach it is :class:`EndpointUnavailable`: the command takes its full path.
"""

from __future__ import annotations

import json

from turngraph.endpoint.files import LiveEndpoint, data_dir, read_live
from turngraph.producers.hooks.forward import post

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the fast path)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EndpointClient", "EndpointUnavailable", "find"]


class EndpointUnavailable(Exception):
    """The endpoint could not be reached or did not answer with JSON."""


_unreachable: list[bool] = []
"""Not empty once a call failed in this process: :func:`find` then answers None, so a
command that falls back to its full code path does not wait for the endpoint twice."""


class EndpointClient:
    """Requests to one endpoint (``http://host:port``, as ``endpoint.json`` names it)."""

    def __init__(self, live: LiveEndpoint) -> None:
        host, _, port = live.url.removeprefix("http://").rstrip("/").rpartition(":")
        self.host = host.strip("[]") or "127.0.0.1"
        self.port = int(port) if port.isdigit() else 80
        self._token = live.token

    def call(self, op: str, body: dict[str, Any], timeout_s: float = 10.0) -> dict[str, Any]:
        """``POST /v1/<op>`` with ``body``; the reply object."""
        payload = json.dumps(body).encode("utf-8")
        try:
            reply = json.loads(post((self.host, self.port), f"/v1/{op}", self._token, payload,
                                    timeout_s))  # fmt: skip
        except (OSError, ValueError, UnicodeError) as exc:
            _unreachable.append(True)
            raise EndpointUnavailable(type(exc).__name__) from None
        if not isinstance(reply, dict):
            _unreachable.append(True)
            raise EndpointUnavailable("not a JSON object")
        return reply


def find() -> EndpointClient | None:
    """A client of the endpoint the data folder names, if one is alive."""
    if _unreachable:
        return None
    live = read_live(data_dir())
    return EndpointClient(live) if live is not None else None
