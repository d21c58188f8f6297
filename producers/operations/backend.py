"""What the bridge answers with: the Redis-side clients, found late and found again.

A bridge may start before ``turngraph up``, and embedded services may come back on
another port or password; :class:`Backend` holds the current clients and replaces
them when a new :class:`~turngraph.producers.connection.Connection` is found. It also
caches whether Redis answers a PING, so a publish costs at most one round trip a second.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping

import structlog

from turngraph.producers.connection import Connection, Reachability, Recaller
from turngraph.producers.operations.distill import DistillBackend
from turngraph.producers.publisher import Publisher

__all__ = ["REACHABILITY_TTL_S", "RECONNECT_EVERY_S", "Backend"]

log = structlog.get_logger(__name__)

REACHABILITY_TTL_S = 1.0
"""A publish trusts a PING answered this recently (``status`` always asks anew)."""

RECONNECT_EVERY_S = 2.0
"""Without a backend, the bridge looks for one at most this often."""


class Backend:
    """The publisher, recall and distill clients, queue counters and reachability probe.

    They may be None when no Redis is known at start-up: with ``connect`` given,
    :meth:`ensure` asks it again (at most every ``reconnect_every_s``) until it returns a
    :class:`Connection`. With ``locate`` given too (embedded services: it re-reads
    ``services.json``), a backend whose Redis stopped answering looks there as often and
    moves to the endpoint named there; turns still buffered for the old endpoint are
    abandoned (counted in the old publisher's stats).
    """

    def __init__(
        self,
        *,
        endpoint: str,
        publisher: Publisher | None,
        recaller: Recaller | None,
        queue_status: Callable[[], Mapping[str, int]] | None = None,
        probe: Callable[[], Reachability] | None = None,
        distiller: DistillBackend | None = None,
        connect: Callable[[], Connection | None] | None = None,
        locate: Callable[[], str | None] | None = None,
        reconnect_every_s: float = RECONNECT_EVERY_S,
    ) -> None:
        self.endpoint = endpoint
        """Where memory is, as consent grants name it (no credentials)."""
        self.publisher = publisher
        self.recaller = recaller
        self.queue_status = queue_status
        self.probe = probe
        self.distiller = distiller
        self._connect = connect
        self._locate = locate
        self._reconnect_every_s = reconnect_every_s
        self._url = ""
        self._last_connect = -reconnect_every_s
        self._reached: Reachability | None = None
        self._reached_at = 0.0
        self._ensuring = threading.Lock()

    def ensure(self) -> None:
        """Connect when there is no backend yet, or move when Redis moved (one thread at a
        time: the endpoint and the MCP server answer on several)."""
        if self._connect is None:
            return
        with self._ensuring:
            self._ensure(self._connect)

    def _ensure(self, connect: Callable[[], Connection | None]) -> None:
        moved = self.publisher is not None and self._moved()
        if self.publisher is not None and not moved:
            return
        now = time.monotonic()
        if not moved and now - self._last_connect < self._reconnect_every_s:
            return
        self._last_connect = now
        old = self.publisher if moved else None
        try:
            backend = connect()
        except Exception as exc:  # no backend yet: answer BACKEND_UNAVAILABLE, try later
            log.warning("bridge_connect_failed", error=type(exc).__name__)
            return
        if backend is not None:
            self.publisher = backend.publisher
            self.recaller = backend.recaller
            self.queue_status = backend.queue_status
            self.probe = backend.probe
            self.distiller = backend.distiller
            self._url = backend.redis_url
            self._reached = None
            log.info("bridge_connected", endpoint=self.endpoint, moved=old is not None)
            if old is not None:  # its Redis is gone: closing waits, not on this thread
                threading.Thread(target=old.close, name="old-publisher", daemon=True).start()

    def _moved(self) -> bool:
        """Redis stopped answering and ``locate`` names another endpoint (checked at most
        every ``reconnect_every_s``)."""
        if self._locate is None or self.publisher is None:
            return False
        if self.publisher.redis_available and self.reachable().redis:
            return False
        now = time.monotonic()
        if now - self._last_connect < self._reconnect_every_s:
            return False
        self._last_connect = now
        try:
            url = self._locate()
        except Exception as exc:  # an unreadable services.json: stay where we are
            log.warning("bridge_locate_failed", error=type(exc).__name__)
            return False
        return url is not None and url != self._url

    def delivering(self) -> bool:
        """Whether a buffered turn is on its way: the publisher's last send went through
        and Redis answered a PING within the last ``REACHABILITY_TTL_S``."""
        if self.publisher is None or not self.publisher.redis_available:
            return False
        return self.reachable().redis

    def reachable(self, *, fresh: bool = False) -> Reachability:
        """The probe's answer, asked anew when ``fresh`` or older than the TTL."""
        if self.probe is None:
            return Reachability(redis=True)
        now = time.monotonic()
        if fresh or self._reached is None or now - self._reached_at > REACHABILITY_TTL_S:
            self._reached, self._reached_at = self.probe(), now
        return self._reached
