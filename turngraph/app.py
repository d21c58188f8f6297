"""Process assembly: from Clients to a ready ingest pipeline, RQ worker or recall worker."""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any

import redis
from rq import Queue
from rq.serializers import JSONSerializer

from turngraph.clients import Clients
from turngraph.schemas.ontology import ONTOLOGY, Ontology
from turngraph.schemas.ontology.turtle import ontology_from
from turngraph.settings import Settings
from turngraph.worker_config import config_fingerprint
from turngraph.workers.embeddings.factory import build_embedder as embedder_for
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.enrichment import EnrichmentBacklog, EnrichOrder
from turngraph.workers.extraction.models import Extractor
from turngraph.workers.extraction.offline import OfflineExtractor, StoreFirst
from turngraph.workers.graph.bolt_store import BoltGraphStore
from turngraph.workers.graph.distill_store import BoltDistillStore
from turngraph.workers.graph.entity_provenance import move_entity_provenance
from turngraph.workers.graph.identity import ensure_graph_identity, stored_event_ids
from turngraph.workers.graph.neo4j_only import (
    apply_neo4j_only,
    browser_statements,
    lists_vectors,
)
from turngraph.workers.graph.schema import ensure_schema
from turngraph.workers.graph.vectors import GraphVectors
from turngraph.workers.ingest.admission import Admission
from turngraph.workers.ingest.batching import BatchObserver, IngestWorker
from turngraph.workers.ingest.embeddings import MemoryEmbedder
from turngraph.workers.ingest.markers import StoredLookup, reconcile_markers
from turngraph.workers.ingest.pipeline import IngestPipeline
from turngraph.workers.llm_provider import EXTRACTION_COUNTERS, ProviderStats
from turngraph.workers.maintenance.asks import AskAdmission
from turngraph.workers.maintenance.context import JOB_MARGIN_S, Distiller, DistillOptions
from turngraph.workers.maintenance.jobs import (
    request_enrichment,
    schedule_reextract,
    schedule_sweep,
)
from turngraph.workers.maintenance.triggers import FollowUps
from turngraph.workers.maintenance.worker import MaintenanceWorker
from turngraph.workers.recall.ranking import preset as ranking_preset
from turngraph.workers.recall.worker import LatencyObserver, RecallWorker
from turngraph.workers.trusted_jobs import MaintenanceJob, TrustedJob

if TYPE_CHECKING:
    import openai

    from turngraph.workers.extraction.endpoint import LLMEndpoint
    from turngraph.workers.maintenance.context import Reextractor

__all__ = [
    "INGEST_MAINTENANCE_INTERVAL_S", "MAINTENANCE_INTERVAL_S",
    "SMALL_CONTEXT_TOKENS", "build_admission", "build_ask_admission", "build_distiller",
    "build_embedder", "build_extractor", "build_graph_store", "build_ingest_worker",
    "build_maintenance_worker", "build_pipeline", "build_recall_worker", "build_reextractor",
    "distill_options", "enrichment_backlog", "ingest_burst", "ingest_queue", "llm_request_options",
    "load_ontology", "maintenance_queue", "stored_lookup",
]  # fmt: skip

INGEST_MAINTENANCE_INTERVAL_S = 5
"""How often an ingest worker cleans RQ's registries: a job whose worker died is retried
once its started-registry entry lapses (``workers/ingest/batching.py``; RQ's default is
10 minutes)."""

MAINTENANCE_INTERVAL_S = 10
"""How often the maintenance worker runs RQ's maintenance, which also starts again RQ's
scheduler child when it died (it exits on a lost Redis; RQ's default is 10 minutes)."""


def load_ontology(settings: Settings) -> Ontology:
    """Our ontology, extended by the configured Turtle file (a broken file is a typed error)."""
    return ontology_from(settings.ontology_path, ONTOLOGY)


SMALL_CONTEXT_TOKENS = 8_192
"""At or below this context (``llm_context_tokens``), requests use the short prompt."""


def build_extractor(
    settings: Settings, llm_client: openai.OpenAI | None, *, ontology: Ontology = ONTOLOGY
) -> Extractor:
    """Ingest's extractor: the offline rules, and with an LLM configured (``llm_client``)
    every turn marked for the enrichment pass (:class:`StoreFirst`): a turn is stored and
    recallable in the same time with or without an LLM; the LLM's entities come later."""
    offline = OfflineExtractor(ontology)
    return offline if llm_client is None else StoreFirst(offline)


def llm_request_options(settings: Settings, endpoint: LLMEndpoint | None = None) -> dict[str, Any]:
    """What extraction requests look like under ``settings`` (both passes); without
    ``LLM_CONTEXT_TOKENS``, the context the server reports (llama.cpp) where it does."""
    from turngraph.workers.extraction.endpoint import OutputMode
    from turngraph.workers.extraction.llm_calls import DEFAULT_BATCH_MAX_CHARS

    context = settings.llm_context_tokens
    if context is None and endpoint is not None:
        context = endpoint.reported_context_tokens()
    small = context is not None and context <= SMALL_CONTEXT_TOKENS
    max_chars = DEFAULT_BATCH_MAX_CHARS
    if context is not None:
        # ~3 characters a token; the prompt's instructions take about 1,500 tokens
        room = context - (settings.llm_max_output_tokens or 0) - 1_500
        max_chars = max(1_000, min(max_chars, room * 3))
    return {
        "max_output_tokens": settings.llm_max_output_tokens,
        "max_tokens_parameter": settings.llm_max_tokens_parameter,
        "temperature": settings.llm_temperature,
        "output_mode": OutputMode(settings.llm_output_mode),
        "batch_max_turns": settings.llm_batch_max_turns,
        "batch_max_chars": max_chars,
        "short_prompt": small,
    }


def build_graph_store(
    clients: Clients,
    ontology: Ontology | None = None,
    *,
    previous_turns: bool = False,
    on_neo4j: bool = False,
) -> BoltGraphStore:
    """The graph store on the process's driver, restricted to the ontology's labels and
    relationship types (the configured ontology unless one is given); ``previous_turns``:
    its writes also return each turn's previous turn (the ingest embedding's context);
    ``on_neo4j``: the graph is Neo4j, whose cached plans the writes keep."""
    ontology = ontology or load_ontology(clients.settings)
    return BoltGraphStore(
        clients.graph,
        clients.graph_database,
        entity_labels=ontology.labels(),
        relation_types=ontology.relationship_types(),
        previous_turns=previous_turns,
        keep_plans=on_neo4j,
    )


def build_pipeline(clients: Clients, extractor: Extractor | None = None) -> IngestPipeline:
    """Schema set up (idempotent), the ingested markers checked if the graph is not the one
    they were recorded against, writer and extractor wired; one per process.

    The extractor is the offline rules (:func:`build_extractor`); with an LLM endpoint
    configured, every stored turn joins the enrichment backlog and an enrichment run is
    asked for on the maintenance queue.
    """
    ontology = load_ontology(clients.settings)
    settings = clients.settings
    embedder = build_embedder(settings)
    ensure_schema(clients.graph, clients.graph_database, ontology.labels())
    identity = ensure_graph_identity(clients.graph, clients.graph_database)
    # the markers follow the graph: a new, wiped or other graph keeps only its turns'
    reconcile_markers(clients.redis, identity, stored_lookup(clients))
    move_entity_provenance(clients.graph, clients.graph_database, ontology.labels())
    # Full-text and vector indexes for people searching in Neo4j Browser, as the settings
    # ask; skipped on other engines (the identity named the engine).
    choice = settings.neo4j_browser_indexes
    on_neo4j = identity.engine == "neo4j"
    if on_neo4j:
        apply_neo4j_only(
            clients.graph,
            browser_statements(
                choice,
                ontology.labels(),
                ontology.relationship_types(),
                embedding_dimension=embedder.dimension if embedder is not None else None,
            ),
            clients.graph_database,
        )
    return IngestPipeline(
        redis_client=clients.redis,
        store=build_graph_store(
            clients, ontology, previous_turns=embedder is not None, on_neo4j=on_neo4j
        ),
        extractor=extractor or build_extractor(settings, clients.llm, ontology=ontology),
        changes_stream=settings.changes_stream,
        followups=(
            FollowUps(clients.redis, distill_options(settings))
            if settings.distill_enabled
            else None
        ),
        embeddings=(
            MemoryEmbedder(
                embedder,
                GraphVectors(
                    clients.graph,
                    clients.graph_database,
                    lists=on_neo4j and lists_vectors(choice),
                ),
            )
            if embedder is not None
            else None
        ),
        backlog=enrichment_backlog(settings),
        enrich=(
            functools.partial(
                request_enrichment,
                clients.redis,
                settings.maintenance_queue,
                int(settings.llm_reextract_budget_s) + JOB_MARGIN_S,
            )
            if clients.llm is not None
            else None
        ),
    )


def enrichment_backlog(settings: Settings) -> EnrichmentBacklog:
    return EnrichmentBacklog(
        max_turns=settings.llm_enrich_backlog_max, order=EnrichOrder(settings.llm_enrich_order)
    )


def distill_options(settings: Settings) -> DistillOptions:
    return DistillOptions(
        summary_every_n_turns=settings.summary_every_n_turns,
        compact_min_summaries=settings.compact_min_summaries,
        compact_after_days=settings.compact_after_days,
        compact_sweep_every_s=settings.compact_sweep_every_s,
        auto_promote=settings.auto_promote,
        recap_budget_tokens=settings.recap_budget_tokens,
        maintenance_queue=settings.maintenance_queue,
        reextract_every_s=settings.llm_reextract_every_s,
    )


def build_distiller(clients: Clients) -> Distiller:
    """What maintenance jobs work with; the LLM summarizer and the re-extraction pass when
    an endpoint is configured."""
    summarizer = None
    reextractor = None
    if clients.llm is not None:
        from turngraph.workers.extraction.shared_counts import SharedCounts
        from turngraph.workers.llm_provider import SUMMARY_COUNTERS
        from turngraph.workers.maintenance.llm_summary import LLMSummarizer

        summarizer = LLMSummarizer(
            clients.llm,
            model=clients.settings.llm_model,
            stats=ProviderStats(SUMMARY_COUNTERS, mirror=SharedCounts(clients.redis, "summary")),
            endpoint=clients.llm_endpoint,
            max_output_tokens=clients.settings.llm_summary_max_output_tokens,
            temperature=clients.settings.llm_temperature,
        )
        reextractor = build_reextractor(clients)
    return Distiller(
        store=BoltDistillStore(clients.graph, clients.graph_database),
        redis=clients.redis,
        changes_stream=clients.settings.changes_stream,
        options=distill_options(clients.settings),
        summarizer=summarizer,
        reextractor=reextractor,
    )


def build_reextractor(clients: Clients) -> Reextractor | None:
    """The LLM re-extraction pass: the configured LLM extractor, whose failed batches stay
    pending (no offline fallback: their offline entities are already stored), and the
    graph store ingest writes with. None without an LLM endpoint."""
    if clients.llm is None:
        return None
    from turngraph.workers.extraction.llm import LLMExtractor
    from turngraph.workers.extraction.shared_counts import SharedCounts
    from turngraph.workers.maintenance.context import Reextractor
    from turngraph.workers.maintenance.reextract import NoFallback

    settings = clients.settings
    ontology = load_ontology(settings)
    extractor = LLMExtractor(
        clients.llm,
        model=settings.llm_model,
        ontology=ontology,
        concurrency=settings.llm_calls_at_once,
        fallback=NoFallback(),
        stats=ProviderStats(EXTRACTION_COUNTERS, mirror=SharedCounts(clients.redis, "reextract")),
        # no cooldown: a failing batch ends its run, so a dead endpoint costs one call
        # per run already (ingest's long cooldown would idle re-extraction for minutes)
        cooldown_s=0.0,
        endpoint=clients.llm_endpoint,
        **llm_request_options(settings, clients.llm_endpoint),
    )
    return Reextractor(
        extractor=extractor,
        store=build_graph_store(clients, ontology),
        offline=OfflineExtractor(ontology),
        backlog=enrichment_backlog(settings),
        budget_s=settings.llm_reextract_budget_s,
    )


def ingest_queue(clients: Clients) -> Queue:
    return Queue(
        clients.settings.ingest_queue,
        connection=clients.redis,
        serializer=JSONSerializer,
        job_class=TrustedJob,
    )


def build_ingest_worker(
    clients: Clients,
    pipeline: IngestPipeline | None = None,
    batch_observer: BatchObserver | None = None,
) -> IngestWorker:
    """No fork per job (warm graph connections); each job is a batch of turns written
    through ``pipeline`` (built from ``clients`` when not given); ``batch_observer`` is
    told of every batch (the metrics)."""
    return IngestWorker(
        [ingest_queue(clients)],
        pipeline=pipeline or build_pipeline(clients),
        connection=clients.redis,
        serializer=JSONSerializer,
        job_class=TrustedJob,
        maintenance_interval=INGEST_MAINTENANCE_INTERVAL_S,
        batch_observer=batch_observer,
        config_fingerprint=config_fingerprint(clients.settings),
    )


def build_admission(clients: Clients, conn: redis.Redis | None = None) -> Admission:
    """Admits every inbox (the operator's and the tenants') into the ingest queue as batch
    jobs, on its own connection unless given one (its idle wait blocks); run beside the
    ingest worker."""
    settings = clients.settings
    if conn is None:
        assert settings.redis_url
        conn = redis.Redis.from_url(
            settings.redis_url, socket_timeout=10.0, socket_connect_timeout=2.0
        )
    queue = Queue(settings.ingest_queue, connection=conn, serializer=JSONSerializer)
    return Admission(
        conn, queue, job_timeout_s=settings.job_timeout_s, stored=stored_lookup(clients)
    )


def stored_lookup(clients: Clients) -> StoredLookup:
    """Which of some event ids the graph holds (what the ingested markers are checked by)."""
    return functools.partial(stored_event_ids, clients.graph, clients.graph_database)


def ingest_burst(clients: Clients, worker: IngestWorker | None = None) -> None:
    """Admit every inbox and ingest it all, then return (tests, benches, demos)."""
    burst = worker or build_ingest_worker(clients)
    build_admission(clients, clients.redis).burst(
        lambda: burst.work(burst=True, with_scheduler=False)
    )


def maintenance_queue(clients: Clients) -> Queue:
    return Queue(
        clients.settings.maintenance_queue,
        connection=clients.redis,
        serializer=JSONSerializer,
        job_class=MaintenanceJob,
    )


def build_maintenance_worker(clients: Clients) -> MaintenanceWorker:
    """Summaries, compaction, promotion, recap: the distiller installed for its jobs, and
    the next periodic compaction sweep (and, with an LLM endpoint, the next LLM
    re-extraction run) scheduled (RQ's scheduler runs them)."""
    queue = maintenance_queue(clients)
    distiller = build_distiller(clients)
    schedule_sweep(queue, clients.settings.compact_sweep_every_s)
    if distiller.reextractor is not None:
        schedule_reextract(
            queue,
            clients.settings.llm_reextract_every_s,
            job_timeout_s=distiller.reextractor.job_timeout_s,
        )
    return MaintenanceWorker(
        [queue],
        connection=clients.redis,
        serializer=JSONSerializer,
        job_class=MaintenanceJob,
        maintenance_interval=MAINTENANCE_INTERVAL_S,
        distiller=distiller,
        config_fingerprint=config_fingerprint(clients.settings),
    )


def build_embedder(settings: Settings) -> Embedder | None:
    """The configured embedder for recall's semantic signal (``None``: lexical only)."""
    key = settings.embedding_api_key
    return embedder_for(
        settings.embedding_provider,
        model_path=settings.embedding_model_path,
        base_url=settings.embedding_base_url,
        api_key=key.get_secret_value() if key else None,
        model=settings.embedding_model,
        dimensions=settings.embedding_dimensions,
        batch_size=settings.embedding_batch_size,
        timeout_s=settings.embedding_timeout_s,
        max_retries=settings.embedding_max_retries,
    )


def build_ask_admission(clients: Clients) -> AskAdmission:
    """Admits clients' distillation asks as maintenance jobs, beside the worker."""
    return AskAdmission(clients.redis, maintenance_queue(clients))


def build_recall_worker(
    clients: Clients,
    *,
    embedder: Embedder | None = None,
    latency_observer: LatencyObserver | None = None,
    queued_observer: LatencyObserver | None = None,
) -> RecallWorker:
    """The recall replica (the configured embedder unless one is given). Nothing here
    contacts the graph: :meth:`RecallWorker.run` reads it in the background."""
    return RecallWorker(
        embedder=embedder if embedder is not None else build_embedder(clients.settings),
        lag_degraded_s=clients.settings.recall_lag_degraded_s,
        latency_observer=latency_observer,
        queued_observer=queued_observer,
        graph_probe=clients.graph.verify_connectivity,
        vectors=GraphVectors(clients.graph, clients.graph_database),
        redis_client=clients.redis,
        store=build_graph_store(clients),
        requests_key=clients.settings.recall_requests_key,
        changes_stream=clients.settings.changes_stream,
        reply_ttl_s=clients.settings.recall_reply_ttl_s,
        shards=clients.settings.recall_shard_set(),
        config_fingerprint=config_fingerprint(clients.settings),
        ranking=ranking_preset(clients.settings.recall_ranking),
    )
