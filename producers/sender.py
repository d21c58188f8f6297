"""Inbox calls kept in flight, so Redis runs batches while the next one is serialized.

redis-py's ``Pipeline.execute`` writes and then waits; the publisher instead writes a
batch, prepares the next one (redaction, JSON) while Redis executes the script, and reads
replies only when it must. This module owns that one connection and its error handling.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any, Protocol

import redis
from redis.connection import AbstractConnection

from turngraph.producers.bounded_queue import BatchResult, PreparedJob, pack_resp

__all__ = ["SEND_ERRORS", "ScriptSender", "ScriptTarget", "pack_resp"]

SEND_ERRORS = (redis.ConnectionError, redis.TimeoutError, redis.ResponseError)
"""What a send or receive may raise; the caller keeps the jobs and backs off."""


class ScriptTarget(Protocol):
    """What the sender needs of a queue: the bounded RQ queue, or a tenant's inbox."""

    conn: redis.Redis

    def load_command(self) -> tuple[str, ...] | None:
        """The command run once per connection before the first call, if any."""
        ...

    def commands(
        self, jobs: Sequence[PreparedJob], dropped_local: int = 0
    ) -> list[tuple[Any, ...]]:
        """The commands that publish ``jobs`` in one atomic step."""
        ...

    def parse_replies(self, replies: Sequence[Any]) -> BatchResult:
        """Their replies, in order, as outcomes per event."""
        ...

    def prepare(self, event: Any) -> PreparedJob: ...


class ScriptSender:
    """Writes inbox calls and reads their replies, in order, on one pooled connection.

    Several calls may be in flight (written, replies not yet read); a call is its target's
    :meth:`~ScriptTarget.commands` (the operator's ``MULTI`` … ``EXEC``, a tenant's
    ``FCALL``). A target's ``load_command``, if any, runs once per connection.
    """

    def __init__(self, queue: ScriptTarget) -> None:
        self._queue = queue
        self._conn: AbstractConnection | None = None
        self._replies: deque[int] = deque()  # replies each call in flight awaits

    @property
    def in_flight(self) -> int:
        """Calls written whose replies have not been read."""
        return len(self._replies)

    def send(self, jobs: Sequence[PreparedJob], dropped_local: int = 0) -> None:
        """Write one call (its commands) for ``jobs``; does not wait for its replies."""
        commands = self._queue.commands(jobs, dropped_local)
        conn = self._connection()
        conn.send_packed_command([pack_resp(c) for c in commands], check_health=False)
        self._replies.append(len(commands))

    def receive(self) -> BatchResult:
        """Read the replies of the oldest call in flight."""
        assert self._conn is not None and self._replies
        replies = [self._conn.read_response() for _ in range(self._replies[0])]
        self._replies.popleft()
        return self._queue.parse_replies(replies)

    def reset(self) -> None:
        """Drop the connection after an error (half-read replies must not be reused)."""
        self._replies.clear()
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.disconnect()
            self._queue.conn.connection_pool.release(conn)  # type: ignore[arg-type]

    def close(self) -> None:
        """Give the connection back to the pool."""
        if self._replies:
            self.reset()
            return
        conn, self._conn = self._conn, None
        if conn is not None:
            self._queue.conn.connection_pool.release(conn)  # type: ignore[arg-type]

    def _connection(self) -> AbstractConnection:
        if self._conn is None:
            conn = self._queue.conn.connection_pool.get_connection()
            try:
                load = self._queue.load_command()
                if load is not None:
                    conn.send_command(*load)
                    conn.read_response()
            except BaseException:
                conn.disconnect()
                self._queue.conn.connection_pool.release(conn)
                raise
            self._conn = conn
        return self._conn
