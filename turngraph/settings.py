"""The one settings object, built in entrypoints only (never at import)."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import platformdirs
from pydantic import Field, SecretStr, ValidationInfo, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from turngraph.schemas import defaults, keys
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.shards import ShardSet, parse_shard_list
from turngraph.workers.recall.ranking import PRESETS as RANKING_PRESETS

__all__ = ["DropPolicy", "LogFormat", "Settings", "default_data_dir", "url_problem"]

APP_NAME = "turngraph"
"""The folder name under the platform's user data directory."""


def default_data_dir() -> Path:
    """One data folder per user, wherever a command runs: the platform's user data folder
    (``$XDG_DATA_HOME/turngraph``, else ``~/.local/share/turngraph`` on Linux;
    ``~/Library/Application Support/turngraph`` on macOS)."""
    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


LOCAL_HOSTS = frozenset({"localhost", "::1", "0.0.0.0"})
"""Hosts of an LLM endpoint on this machine (so are 127.x addresses)."""


URL_SCHEMES: dict[str, tuple[frozenset[str], str]] = {
    "redis_url": (
        frozenset({"redis", "rediss", "unix"}),
        "redis://[user:password@]host:port[/db] (or rediss://, unix:///path.sock)",
    ),
    "graph_uri": (
        frozenset({"bolt", "bolt+s", "bolt+ssc", "neo4j", "neo4j+s", "neo4j+ssc"}),
        "bolt://host:7687 (or neo4j://, bolt+s://, neo4j+s://)",
    ),
    "llm_base_url": (frozenset({"http", "https"}), "http(s)://host:port/v1"),
    "embedding_base_url": (frozenset({"http", "https"}), "http(s)://host:port/v1"),
}
"""Each URL setting's accepted schemes and the form an error message shows."""


def url_problem(field: str, value: str) -> str | None:
    """What is wrong with ``value`` as the URL setting ``field`` (its expected form), or
    None; never quotes the value (it can hold a password). What passes here is what the
    client libraries accept: no URL reaches redis-py, the graph driver or the HTTP client
    to fail there with a bare ``ValueError``."""
    schemes, form = URL_SCHEMES[field]
    text = value.strip()
    scheme, separator, rest = text.partition("://")
    scheme = scheme.lower()
    if not separator or scheme not in schemes or not rest:
        return f"expected {form}"
    try:
        parts = urlsplit(text)
    except ValueError:  # an unclosed IPv6 bracket
        return f"the host is malformed (an IPv6 address goes in brackets); expected {form}"
    try:
        port = parts.port
    except ValueError:  # not a number, or past 65535
        return f"the port must be a number from 1 to 65535; expected {form}"
    if port == 0:
        return f"the port must be a number from 1 to 65535; expected {form}"
    if scheme == "unix":
        if not parts.path:
            return f"the socket's path is missing; expected {form}"
        return _redis_query_problem(text, parts.query, form)
    if not parts.hostname:
        return f"the host is missing; expected {form}"
    if scheme in ("redis", "rediss"):
        database = parts.path.strip("/")
        if database and not database.isdecimal():
            return f"the database after the host must be a number (/0); expected {form}"
        return _redis_query_problem(text, parts.query, form)
    if field == "graph_uri" and (parts.username or parts.password):
        return (
            "the graph URI takes no user or password (set TURNGRAPH_GRAPH_USER and "
            f"TURNGRAPH_GRAPH_PASSWORD); expected {form}"
        )
    if field == "graph_uri" and (parts.query or parts.path.strip("/")):
        # the driver ignores a path (deprecated, to become an error) and refuses a bolt://
        # routing context; the database is TURNGRAPH_GRAPH_DATABASE
        return (
            "the graph URI takes no path or ?query (TURNGRAPH_GRAPH_DATABASE names the "
            f"database); expected {form}"
        )
    return None


def _redis_query_problem(text: str, query: str, form: str) -> str | None:
    if not query:
        return None
    import redis  # only for a URL with a ?query: redis-py's own parser judges it

    try:  # builds the client's connection object; connects nowhere
        redis.ConnectionPool.from_url(text).make_connection()
    except (ValueError, TypeError, redis.RedisError):
        return (
            "its ?query has a parameter redis-py does not take, or a value of the wrong "
            f"type; expected {form}"
        )
    return None


class LogFormat(str, Enum):
    AUTO = "auto"
    JSON = "json"
    CONSOLE = "console"


class Settings(BaseSettings):
    """Everything configurable, from ``TURNGRAPH_*`` variables or a ``.env`` file.

    With neither ``redis_url`` nor ``graph_uri`` set, the embedded services under
    ``data_dir`` are used (started by ``turngraph up`` / ``turngraph services``).
    """

    model_config = SettingsConfigDict(
        env_prefix="TURNGRAPH_", env_file=".env", env_file_encoding="utf-8", extra="ignore"
    )

    data_dir: Path = Field(default_factory=default_data_dir)
    """Embedded databases, ``services.json``, consent, the scope salt and hints; one per
    user by default (``TURNGRAPH_DATA_DIR`` overrides it), so every command and editor finds
    the running services from any folder."""

    redis_url: str | None = None
    tenant: str | None = Field(default=None, pattern=r"^[a-z0-9]{1,32}$")
    """Set on a producer holding a tenant credential (``turngraph credentials issue``):
    publish into and recall from that tenant's keys only. Unset: the operator's
    credential (the embedded single-user setup)."""
    graph_uri: str | None = None
    graph_user: str = "neo4j"
    graph_password: SecretStr = SecretStr("")
    graph_database: str | None = None
    embedded_graph: defaults.GraphEngine = "arcadedb"
    """The graph server the project starts when no URLs are set: ArcadeDB from its wheel
    (nothing to install) or Neo4j 5.26 Community, fetched once through Maven into the data
    folder's cache (needs Java 17+ and Maven; serves Neo4j Browser). ``--graph`` overrides it."""
    neo4j_browser_indexes: Literal["all", "text", "none"] = "all"
    """On Neo4j, the indexes every ingest worker's start creates for people searching in
    Neo4j Browser: ``all`` the full-text indexes and the vector index over the turns'
    vectors (each turn then also stores its vector as a list, which the index reads),
    ``text`` the full-text ones only, ``none`` neither. Recall never reads them; each costs
    graph CPU per turn (docs/operations.md). Another engine has none."""

    ingest_queue: str = defaults.INGEST_QUEUE
    maintenance_queue: str = defaults.MAINTENANCE_QUEUE
    recall_requests_key: str = keys.RECALL_REQUESTS
    changes_stream: str = keys.CHANGES_STREAM
    max_queue_length: int = Field(default=defaults.MAX_QUEUE_LENGTH, ge=1)
    drop_policy: DropPolicy = DropPolicy.DROP_NEWEST
    job_timeout_s: int = Field(default=defaults.JOB_TIMEOUT_S, ge=1)
    publish_buffer_size: int = Field(default=defaults.PUBLISH_BUFFER_SIZE, ge=1)
    """Events one producer buffers while Redis is away; beyond it new ones are dropped."""

    ontology_path: Path | None = None
    """A Turtle (OWL) file extending our ontology with more entity and relation types."""

    llm_base_url: str | None = None
    llm_api_key: SecretStr | None = None
    llm_model: str = "gpt-4o-mini"
    llm_timeout_s: float = Field(default=30.0, gt=0)
    """One request's timeout (the openai client's); a batch's budget can cut it shorter."""
    llm_max_retries: int = Field(default=2, ge=0)
    """Retries of the openai client itself (429 with ``Retry-After``, 5xx, timeouts)."""
    llm_concurrency: int | None = Field(default=None, ge=1)
    """LLM calls the enrichment pass runs at once. Unset: 1 for an endpoint on this
    machine (a local server with one slot), else 4."""
    llm_enrich_order: Literal["oldest", "newest"] = "newest"
    """Which stored turns the enrichment pass takes first; a full backlog drops those it
    would take last (their enrichment only: the turns stay stored)."""
    llm_enrich_backlog_max: int = Field(default=defaults.REEXTRACT_PENDING_MAX, ge=1)
    """Most turns waiting for the LLM."""
    llm_mode_ttl_s: int = Field(default=86_400, ge=60)
    """How long the output mode found for the endpoint and model is kept in Redis (every
    process uses it); found again after it expires or when either changes."""
    llm_output_mode: Literal[
        "auto", "json_schema", "json_object_schema", "json_object", "prompt_only"
    ] = "auto"
    """How the answer's schema reaches the server; ``auto`` steps down on the first refusal
    naming ``response_format`` and remembers it for the process (``docs/llm.md``)."""
    llm_system_prompt: Literal["auto", "system", "merge"] = "auto"
    """``merge`` puts the instructions into the first user message (templates that drop
    system messages, e.g. gemma); ``auto`` does so once the server is seen dropping it."""
    llm_batch_max_turns: int = Field(default=8, ge=1, le=50)
    """Turns per extraction call (fewer for a model with a small context)."""
    llm_context_tokens: int | None = Field(default=None, ge=512)
    """The model's context window, when small: at 8192 or less the short system prompt is
    used and a call's turns are cut to fit (``n_ctx`` of llama.cpp, ``num_ctx`` of Ollama).
    Unset: what the server reports (llama.cpp's ``/props``), where it does."""
    llm_summary_max_output_tokens: int = Field(default=1024, ge=64)
    """Output cap of a summary call (the prompt asks for about 400 tokens)."""
    llm_reextract_budget_s: float = Field(default=240.0, gt=0)
    """One enrichment run's LLM work ends within this (its job timeout is 60 s more);
    results are recorded per group of calls, so the next run resumes."""
    llm_max_output_tokens: int | None = Field(default=4096, ge=1)
    """Output cap per extraction call (a looping model stops here); None sends no cap."""
    llm_max_tokens_parameter: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """The name the server reads the cap under: OpenAI's reasoning models want
    ``max_completion_tokens``; vLLM, Ollama and llama.cpp read ``max_tokens``."""
    llm_temperature: float | None = Field(default=0.0, ge=0, le=2)
    """0 for repeatable extraction (Ollama's default is 0.8); None sends none (reasoning
    models accept only their default)."""
    llm_reextract_every_s: int = Field(default=defaults.REEXTRACT_EVERY_S, ge=5)
    """The periodic enrichment run (besides the one each ingested batch asks for); the
    backlog is ``llm_enrich_backlog`` in ``turngraph queue status``."""

    recall_reply_ttl_s: int = Field(default=defaults.RECALL_REPLY_TTL_S, ge=1)
    recall_lag_degraded_s: float = Field(default=defaults.RECALL_LAG_DEGRADED_S, gt=0)
    """A recall replica this far behind the change stream flags ``change_stream_lag``."""
    recall_shards: int = Field(default=1, ge=1, le=4096)
    """Shards the recall index is split into (docs/scaling.md); replicas and every client
    must agree. 1: unsharded."""
    recall_replica_shards: str | None = None
    """The shards this recall replica serves, e.g. ``0,2``. Unset: the one its
    ``recall_replica_ordinal`` gives, else every shard."""
    recall_replica_ordinal: int | None = Field(default=None, ge=0)
    """The replica's index in its deployment (a StatefulSet's pod index): it serves shard
    ``ordinal % recall_shards``."""
    recall_ranking: str = "default"
    """The named ranking preset recall replicas use (``workers/recall/ranking.py``)."""

    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    """Prometheus endpoint of this process (``/metrics``); unset: none. Each process needs
    its own port (one per worker; 0 picks a free one and logs it)."""
    metrics_host: str = "127.0.0.1"
    """Address the metrics endpoint listens on (``0.0.0.0`` in a container)."""

    embedding_provider: defaults.EmbeddingProviderName = "local"
    """Recall's semantic signal: the shipped in-process model, an OpenAI-compatible
    endpoint, or none (lexical and graph only)."""
    embedding_model_path: Path | None = None
    """One model folder instead of the shipped pair (``local``): an ONNX sentence-transformer
    (``model.onnx``, ``tokenizer.json``) or a model2vec folder."""
    embedding_base_url: str | None = None
    embedding_api_key: SecretStr | None = None
    embedding_model: str = "text-embedding-3-small"
    embedding_dimensions: int | None = Field(default=None, ge=1)
    embedding_batch_size: int = Field(default=128, ge=1, le=2048)
    embedding_timeout_s: float = Field(default=10.0, gt=0)
    embedding_max_retries: int = Field(default=2, ge=0)

    distill_enabled: bool = True
    """Ingest workers enqueue summary jobs on the maintenance queue (SPEC §9)."""
    summary_every_n_turns: int = Field(default=defaults.SUMMARY_EVERY_N_TURNS, ge=0)
    """A summary every this many turns of a session (0: only on semantic triggers)."""
    compact_min_summaries: int = Field(default=defaults.COMPACT_MIN_SUMMARIES, ge=1)
    compact_after_days: float = Field(default=defaults.COMPACT_AFTER_DAYS, gt=0)
    compact_sweep_every_s: int = Field(default=defaults.COMPACT_SWEEP_EVERY_S, ge=10)
    auto_promote: bool = False
    """Memory directives in user turns (``preference (user): …``) become promoted memories."""
    recap_budget_tokens: int = Field(default=defaults.RECAP_BUDGET_TOKENS, ge=100)

    hook_deadline_ms: int = Field(default=750, ge=50, le=60_000)
    """Editor hooks: how long recall before a prompt may take, from the hook's start (the
    editor's own timeout for the hook is the ceiling); past it the prompt goes without."""
    hook_start_budget_tokens: int = Field(default=1_500, ge=200, le=20_000)
    """Editor hooks: the session-start context (previous session's recap plus standing
    decisions and preferences) fits in this many tokens."""

    log_level: str = "INFO"
    log_format: LogFormat = LogFormat.AUTO

    @property
    def embedded(self) -> bool:
        """True when the project itself must provide Redis and the graph server."""
        return self.redis_url is None and self.graph_uri is None

    @field_validator(
        "llm_temperature",
        "llm_max_output_tokens",
        "llm_concurrency",
        "llm_context_tokens",
        "metrics_port",
        mode="before",
    )
    @classmethod
    def _none_when_empty(cls, value: object) -> object:
        """``TURNGRAPH_LLM_TEMPERATURE=`` (or ``none``) sends no value at all;
        ``TURNGRAPH_METRICS_PORT=off`` serves no metrics."""
        if isinstance(value, str) and value.strip().lower() in ("", "none", "off"):
            return None
        return value

    def recall_shard_set(self) -> ShardSet:
        """The shards this recall replica serves (``ShardConfigError`` names the setting)."""
        owned = (
            parse_shard_list(self.recall_replica_shards)
            if self.recall_replica_shards is not None and self.recall_replica_shards.strip()
            else None
        )
        return ShardSet.of(self.recall_shards, owned, self.recall_replica_ordinal)

    @field_validator(*URL_SCHEMES, mode="before")
    @classmethod
    def _url_with_its_scheme(cls, value: object, info: ValidationInfo) -> object:
        """A URL names its scheme (``localhost:6379`` would parse as scheme ``localhost``):
        the error says the form expected, never the value (it can hold a password)."""
        if isinstance(value, str) and not value.strip():
            return None
        if not isinstance(value, str):
            return value
        problem = url_problem(info.field_name or "", value)
        if problem:
            raise ValueError(problem)
        return value.strip()

    @field_validator("recall_ranking", mode="after")
    @classmethod
    def _known_ranking(cls, value: str) -> str:
        if value not in RANKING_PRESETS:
            raise ValueError(f"expected one of {', '.join(sorted(RANKING_PRESETS))}")
        return value

    @field_validator("data_dir", mode="after")
    @classmethod
    def _absolute_data_dir(cls, value: Path) -> Path:
        """A relative ``TURNGRAPH_DATA_DIR`` is taken from where the command starts, once."""
        return value.expanduser().absolute()

    @property
    def llm_calls_at_once(self) -> int:
        """``llm_concurrency``, or 1 for an endpoint on this machine and 4 elsewhere."""
        if self.llm_concurrency is not None:
            return self.llm_concurrency
        host = urlsplit(self.llm_base_url).hostname if self.llm_base_url else None
        return 1 if host in LOCAL_HOSTS or (host or "").startswith("127.") else 4

    @property
    def llm_configured(self) -> bool:
        return self.llm_base_url is not None or self.llm_api_key is not None
