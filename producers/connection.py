"""One entry for Python callers: :func:`connect` builds, from the settings, everything a
producer talks to (the publisher, the recall and distill clients, the queue's counters).

``settings`` is anything with the fields of :class:`ProducerSettings`:
``turngraph.settings.Settings`` has them all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import redis

from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.distill_client import DistillClient
from turngraph.producers.publisher import ConsentCheck, Publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.tenant_inbox import read_inbox_stats
from turngraph.schemas.bridge_distill import MAX_DISTILL_DEADLINE_MS
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.errors import ConfigurationError
from turngraph.schemas.keys import RECALL_REPLICA_PREFIX
from turngraph.schemas.recall import DEFAULT_DEADLINE_MS, RecallResponse

__all__ = [
    "CONNECT_TIMEOUT_S", "DISTILL_SOCKET_TIMEOUT_S", "RECALL_SOCKET_SLACK_S", "STATUS_DEADLINE_S",
    "Connection", "ProducerSettings", "Reachability", "Recaller", "connect", "open_publisher",
    "reachability",
]  # fmt: skip

RECALL_SOCKET_SLACK_S = 0.5
"""The recall connection's socket timeout is the deadline plus this."""

DISTILL_SOCKET_TIMEOUT_S = MAX_DISTILL_DEADLINE_MS / 1000 + 1.0
"""The distill connection waits at most the longest deadline a request may ask for."""

CONNECT_TIMEOUT_S = 0.25
"""Connect timeout of the recall and distill connections (a chat never waits on memory)."""

STATUS_DEADLINE_S = 0.5
"""How long ``status`` waits for Redis to answer before it says memory is unreachable."""


class ProducerSettings(Protocol):
    """The settings a producer reads (``turngraph.settings.Settings`` has them all)."""

    @property
    def redis_url(self) -> str | None: ...
    @property
    def data_dir(self) -> Path: ...
    @property
    def tenant(self) -> str | None: ...
    @property
    def ingest_queue(self) -> str: ...
    @property
    def recall_requests_key(self) -> str: ...
    @property
    def recall_shards(self) -> int: ...
    @property
    def max_queue_length(self) -> int: ...
    @property
    def drop_policy(self) -> DropPolicy: ...
    @property
    def publish_buffer_size(self) -> int: ...


class Recaller(Protocol):
    """What asks the recall workers (:class:`producers.recall_client.RecallClient`)."""

    @property
    def recall(self) -> Callable[..., RecallResponse]:
        """``recall(query, **options)``, failing open with a degraded response."""
        ...


@dataclass(frozen=True)
class Reachability:
    """What one round trip found: Redis answered PING within the status deadline, and how
    many recall replicas have a live heartbeat (None: this credential cannot read them)."""

    redis: bool
    recall_replicas: int | None = None


def reachability(conn: redis.Redis) -> Reachability:
    """One PING (within the connection's timeouts) and the recall replicas' heartbeats."""
    try:
        conn.ping()
    except redis.RedisError:
        return Reachability(redis=False)
    try:
        replicas = sum(1 for _ in conn.scan_iter(match=RECALL_REPLICA_PREFIX + "*", count=100))
    except redis.RedisError:  # a tenant's credential may not read them
        return Reachability(redis=True)
    return Reachability(redis=True, recall_replicas=replicas)


@dataclass(frozen=True)
class Connection:
    """What a producer talks to once a Redis endpoint is known."""

    publisher: Publisher
    recaller: Recaller
    queue_status: Callable[[], Mapping[str, int]] | None = None
    distiller: DistillClient | None = None
    probe: Callable[[], Reachability] | None = None
    redis_url: str = ""
    """Where this connection's Redis is (a bridge compares it with where the embedded
    services say they are now)."""

    def close(self) -> None:
        """Deliver what is buffered (bounded wait) and stop the publisher."""
        self.publisher.close()


def open_publisher(
    settings: ProducerSettings, *, consent: ConsentCheck | None = None, **overrides: object
) -> Publisher:
    """A publisher for the configured Redis and ingest queue (``redis_url`` must be set,
    or given among ``overrides``, :class:`Publisher` keyword arguments)."""
    options: dict[str, object] = {
        "redis_url": settings.redis_url,
        "queue_name": settings.ingest_queue,
        "max_queue_length": settings.max_queue_length,
        "drop_policy": settings.drop_policy,
        "buffer_size": settings.publish_buffer_size,
        "consent": consent,
        "tenant": settings.tenant,
    }
    options.update(overrides)
    if not options["redis_url"]:
        raise ConfigurationError("settings.redis_url is not set: resolve the endpoints first")
    return Publisher(**options)  # type: ignore[arg-type]


def connect(
    settings: ProducerSettings,
    *,
    consent: ConsentCheck | None = None,
    deadline_ms: int | None = None,
) -> Connection:
    """The publisher (checking ``consent`` per event), recall and distill clients and the
    queue's counters on ``settings.redis_url`` (or the tenant's keys with ``tenant`` set).

    Raises :class:`ConfigurationError` when ``redis_url`` is missing or not a Redis URL.
    ``deadline_ms``: recall's deadline (default ``DEFAULT_DEADLINE_MS``). ``close()`` the
    connection when done."""
    url = settings.redis_url
    if not url:
        raise ConfigurationError("settings.redis_url is not set: resolve the endpoints first")
    try:
        redis.connection.parse_url(url)
    except ValueError as exc:
        raise ConfigurationError("TURNGRAPH_REDIS_URL is not a Redis URL") from exc
    deadline_ms = deadline_ms or DEFAULT_DEADLINE_MS
    publisher = open_publisher(settings, consent=consent)
    recall_conn = redis.Redis.from_url(
        url,
        socket_timeout=deadline_ms / 1000 + RECALL_SOCKET_SLACK_S,
        socket_connect_timeout=CONNECT_TIMEOUT_S,
    )
    push_conn = redis.Redis.from_url(  # one round trip, answered within the deadline or never
        url,
        socket_timeout=deadline_ms / 1000,
        socket_connect_timeout=min(CONNECT_TIMEOUT_S, deadline_ms / 1000),
    )
    tenant = settings.tenant
    recaller = (
        RecallClient.for_tenant(
            recall_conn,
            tenant,
            deadline_ms=deadline_ms,
            shards=settings.recall_shards,
            push_conn=push_conn,
        )
        if tenant
        else RecallClient(
            recall_conn,
            requests_key=settings.recall_requests_key,
            deadline_ms=deadline_ms,
            shards=settings.recall_shards,
            push_conn=push_conn,
        )
    )
    queue_conn = publisher.queue.conn
    queue = settings.ingest_queue

    def queue_status() -> dict[str, int]:
        if tenant:
            return read_inbox_stats(queue_conn, tenant).as_dict()
        return read_stats(queue_conn, queue).as_dict()

    probe_conn = redis.Redis.from_url(
        url, socket_timeout=STATUS_DEADLINE_S, socket_connect_timeout=STATUS_DEADLINE_S
    )

    def probe() -> Reachability:
        return reachability(probe_conn)

    distiller = DistillClient(
        redis.Redis.from_url(
            url, socket_timeout=DISTILL_SOCKET_TIMEOUT_S, socket_connect_timeout=CONNECT_TIMEOUT_S
        ),
        read_conn=probe_conn,  # the rolling context: one GET, bounded like a status probe
    )
    return Connection(
        publisher=publisher,
        recaller=recaller,
        queue_status=queue_status,
        distiller=distiller,
        probe=probe,
        redis_url=url,
    )
