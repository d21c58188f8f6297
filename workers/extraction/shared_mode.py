"""The output mode an endpoint accepts, found once per deployment (issue 36).

The mode ``auto`` steps down to (``workers/extraction/endpoint.py``) is kept in Redis
under a key derived from the base URL and the model, with an expiry: every process reads
it before its first request, and one process at a time probes (a short ``SET NX`` claim;
the others wait for its finding). docs/llm.md ("Output modes").
"""

from __future__ import annotations

import hashlib
import time

import redis
import structlog

from turngraph.schemas.keys import LLM_MODE_PREFIX

__all__ = ["SharedMode"]

log = structlog.get_logger(__name__)

POLL_S = 0.2
"""How often a process waiting for another's probe looks for its finding."""


class SharedMode:
    """The mode found for one endpoint and model; a Redis error reads as "not known"
    (the process then probes itself, as without Redis), never as a failure."""

    def __init__(self, conn: redis.Redis, base_url: str, model: str, ttl_s: int) -> None:
        digest = hashlib.sha256(f"{base_url}\x1f{model}".encode()).hexdigest()[:16]
        self.key = LLM_MODE_PREFIX + digest
        self._probe_key = self.key + ":probe"
        self._conn = conn
        self.ttl_s = ttl_s

    def get(self) -> str | None:
        try:
            raw = self._conn.get(self.key)
        except redis.RedisError:
            return None
        if raw is None:
            return None
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def put(self, mode: str) -> None:
        try:
            self._conn.set(self.key, mode.encode(), ex=self.ttl_s)
        except redis.RedisError as exc:
            log.warning("llm_output_mode_not_shared", error=type(exc).__name__)

    def forget(self, mode: str) -> None:
        """Drop the kept mode if it is still ``mode`` (the server refused it since)."""
        try:
            if self.get() == mode:
                self._conn.delete(self.key)
        except redis.RedisError:
            return

    def claim_probe(self, hold_s: float) -> bool:
        """True when this process may probe now (no other process is probing)."""
        try:
            return bool(self._conn.set(self._probe_key, b"1", nx=True, ex=max(1, int(hold_s))))
        except redis.RedisError:
            return True

    def release_probe(self) -> None:
        try:
            self._conn.delete(self._probe_key)
        except redis.RedisError:
            return

    def await_finding(self, wait_s: float) -> str | None:
        """Another process probes: its finding, once stored, or None when its claim ended
        without one (or ``wait_s`` passed)."""
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            found = self.get()
            if found is not None:
                return found
            try:
                if not self._conn.exists(self._probe_key):
                    return self.get()
            except redis.RedisError:
                return None
            time.sleep(POLL_S)  # another process's request is in flight
        return None
