"""Every external client, built in one place from Settings and passed in explicitly."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import neo4j
import redis
import structlog
from pydantic import SecretStr

from turngraph.embedded.services import ServiceEndpoints, read_endpoints, wait_for_endpoints
from turngraph.producers.connection import Connection, connect
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.errors import ConfigurationError
from turngraph.settings import Settings

if TYPE_CHECKING:
    import openai

    from turngraph.workers.extraction.endpoint import LLMEndpoint

__all__ = [
    "EMBEDDED_WAIT_S", "GRAPH_INITIAL_RETRY_DELAY_S", "GRAPH_RETRY_S", "INTERACTIVE_GRAPH_RETRY_S",
    "Clients", "build_clients", "build_llm", "build_operations", "producer_consent_endpoint",
    "producer_redis", "producer_redis_url", "resolve_endpoints", "with_endpoints",
]  # fmt: skip

log = structlog.get_logger(__name__)

EMBEDDED_WAIT_S = 90.0
"""How long a process waits for ``turngraph services`` to publish the embedded endpoints."""

GRAPH_INITIAL_RETRY_DELAY_S = 0.02
"""First back-off of the driver's managed-transaction retry (then doubling, jittered)."""

GRAPH_RETRY_S = 30.0
"""How long the driver keeps retrying a managed transaction (its own default): workers."""

INTERACTIVE_GRAPH_RETRY_S = 3.0
"""The same for a command a person waits on: a stopped graph server is reported, not awaited."""


def resolve_endpoints(settings: Settings, wait_s: float = EMBEDDED_WAIT_S) -> Settings:
    """Fill in the embedded services' URLs when none are configured."""
    if settings.redis_url and settings.graph_uri:
        return settings
    if settings.redis_url or settings.graph_uri:
        raise ConfigurationError(
            "set both TURNGRAPH_REDIS_URL and TURNGRAPH_GRAPH_URI, or neither (embedded)"
        )
    return with_endpoints(settings, wait_for_endpoints(settings.data_dir, wait_s))


def with_endpoints(settings: Settings, endpoints: ServiceEndpoints) -> Settings:
    """``settings`` pointed at running embedded services."""
    return settings.model_copy(
        update={
            "redis_url": endpoints.redis_url,
            "graph_uri": endpoints.graph_uri,
            "graph_user": endpoints.graph_user,
            "graph_password": SecretStr(endpoints.graph_password),
            "graph_database": endpoints.graph_database,
        }
    )


@dataclass
class Clients:
    """The process's connections. ``close()`` releases them."""

    settings: Settings
    redis: redis.Redis
    graph: neo4j.Driver
    llm: openai.OpenAI | None = field(default=None)
    llm_endpoint: LLMEndpoint | None = field(default=None)
    """The LLM endpoint as this process found it (output mode, system prompt): one per
    process, shared by extraction, re-extraction and summaries."""

    @property
    def graph_database(self) -> str | None:
        return self.settings.graph_database

    def close(self) -> None:
        self.graph.close()
        self.redis.close()
        if self.llm is not None:
            self.llm.close()


def build_clients(settings: Settings, *, graph_retry_s: float = GRAPH_RETRY_S) -> Clients:
    """Connect to Redis, the graph and (if configured) the LLM endpoint.

    ``graph_retry_s``: how long a graph transaction is retried on transient errors
    (``INTERACTIVE_GRAPH_RETRY_S`` for commands people wait on)."""
    if not (settings.redis_url and settings.graph_uri):
        settings = resolve_endpoints(settings)
    assert settings.redis_url and settings.graph_uri
    redis_client = redis.Redis.from_url(
        settings.redis_url, socket_timeout=5.0, socket_connect_timeout=2.0, health_check_interval=30
    )
    graph = neo4j.GraphDatabase.driver(
        settings.graph_uri,
        auth=(settings.graph_user, settings.graph_password.get_secret_value()),
        max_connection_pool_size=50,
        notifications_min_severity="OFF",
        # Write conflicts between ingest workers are short; the driver's default first
        # retry after 1 s stalled a whole batch (measured with bench.ingest, two workers).
        initial_retry_delay=GRAPH_INITIAL_RETRY_DELAY_S,
        max_transaction_retry_time=graph_retry_s,
    )
    llm = endpoint = None
    if settings.llm_configured:
        from turngraph.workers.extraction.shared_counts import SharedCounts
        from turngraph.workers.extraction.shared_mode import SharedMode

        llm, endpoint = build_llm(settings)
        endpoint.stats.mirror = SharedCounts(redis_client, "endpoint")
        endpoint.shared = SharedMode(
            redis_client, str(llm.base_url), settings.llm_model, settings.llm_mode_ttl_s
        )
    return Clients(
        settings=settings, redis=redis_client, graph=graph, llm=llm, llm_endpoint=endpoint
    )


def build_llm(settings: Settings) -> tuple[openai.OpenAI, LLMEndpoint]:
    """The openai client and the process's endpoint view on it."""
    import openai

    from turngraph.workers.extraction.endpoint import (
        LLMEndpoint,
        OutputMode,
        SystemPrompt,
        final_refusal,
    )

    client = openai.OpenAI(
        base_url=settings.llm_base_url,
        api_key=settings.llm_api_key.get_secret_value() if settings.llm_api_key else "none",
        timeout=settings.llm_timeout_s,
        max_retries=settings.llm_max_retries,
        http_client=openai.DefaultHttpxClient(event_hooks={"response": [final_refusal]}),
    )
    endpoint = LLMEndpoint(
        client,
        model=settings.llm_model,
        output_mode=OutputMode(settings.llm_output_mode),
        system_prompt=SystemPrompt(settings.llm_system_prompt),
        max_tokens_parameter=settings.llm_max_tokens_parameter,
        temperature=settings.llm_temperature,
    )
    return client, endpoint


def producer_redis_url(settings: Settings) -> str | None:
    """The configured Redis URL, or the embedded one if ``turngraph up`` runs; never waits."""
    if settings.redis_url:
        return settings.redis_url
    running = read_endpoints(settings.data_dir)
    return running.redis_url if running else None


def producer_redis(settings: Settings, *, timeout_s: float = 5.0) -> redis.Redis | None:
    """A connection for a command a person waits on, to :func:`producer_redis_url`'s Redis
    (``None``: none configured or running)."""
    url = producer_redis_url(settings)
    if url is None:
        return None
    return redis.Redis.from_url(url, socket_timeout=timeout_s, socket_connect_timeout=1.0)


def producer_consent_endpoint(settings: Settings) -> str:
    """The endpoint consent is recorded for under these settings."""
    return consent_endpoint(settings.redis_url, settings.data_dir)


def build_operations(
    settings: Settings, *, deadline_ms: int | None = None, note_hints: bool = True
) -> Operations:
    """A bridge on the configured (or running embedded) Redis. Without one yet, publish and
    recall answer BACKEND_UNAVAILABLE, and the bridge looks again every few seconds.
    ``note_hints=False``: the folder hints of ``turngraph scopes`` are left alone."""
    consent = ConsentStore(settings.data_dir)
    endpoint = producer_consent_endpoint(settings)

    def connect_when_running() -> Connection | None:
        url = producer_redis_url(settings)
        if url is None:
            return None
        try:
            return connect(
                settings.model_copy(update={"redis_url": url}),
                consent=consent.checker(endpoint),
                deadline_ms=deadline_ms,
            )
        except ConfigurationError:
            log.warning("bridge_redis_url_invalid")  # a bad URL: no backend, not a crash
            return None

    return Operations(
        hasher=ScopeHasher.for_data_dir(settings.data_dir),
        hints=ScopeHints(settings.data_dir) if note_hints else None,
        consent=consent,
        backend=Backend(
            endpoint=endpoint,
            publisher=None,
            recaller=None,
            connect=connect_when_running,
            # embedded services may come back elsewhere (a restarted `turngraph services`)
            locate=None if settings.redis_url else (lambda: producer_redis_url(settings)),
        ),
    )
