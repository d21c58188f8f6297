"""Process assembly: from Clients to a ready ingest pipeline, RQ worker or recall worker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rq import Queue, SimpleWorker
from rq.serializers import JSONSerializer

from schemas.keys import DISTILL_REQUESTS
from schemas.ontology import ONTOLOGY, Ontology
from schemas.ontology.turtle import ontology_from
from turngraph.clients import Clients
from turngraph.settings import Settings
from workers.embeddings.factory import build_embedder as embedder_for
from workers.embeddings.protocol import Embedder
from workers.extraction.models import Extractor
from workers.extraction.offline import OfflineExtractor
from workers.extraction.stats import ExtractionStats
from workers.graph.bolt_store import BoltGraphStore
from workers.graph.neo4j_only import apply_neo4j_only, neo4j_only_statements
from workers.graph.schema import ensure_schema
from workers.graph.vectors import GraphVectors
from workers.ingest.batching import BatchingIngestWorker, requeue_expired_claims
from workers.ingest.embeddings import MemoryEmbedder
from workers.ingest.pipeline import IngestPipeline
from workers.maintenance import context as maintenance_context
from workers.maintenance.context import Distiller, DistillOptions
from workers.maintenance.gateway import DistillGateway
from workers.maintenance.jobs import schedule_sweep
from workers.maintenance.triggers import FollowUps
from workers.recall.worker import RecallWorker
from workers.trusted_jobs import MaintenanceJob, TrustedJob

if TYPE_CHECKING:
    import openai

INGEST_MAINTENANCE_INTERVAL_S = 10
"""How often an idle ingest worker cleans RQ's registries and gives back the claims of
dead workers (``workers/ingest/claims.py``; RQ's default is 10 minutes)."""

INGEST_WORKER_TTL_S = 25
"""RQ's worker TTL; an idle worker wakes every ``TTL - 15`` s, so maintenance runs then."""


def load_ontology(settings: Settings) -> Ontology:
    """Our ontology, extended by the configured Turtle file (a broken file is a typed error)."""
    return ontology_from(settings.ontology_path, ONTOLOGY)


def build_extractor(
    settings: Settings,
    llm_client: openai.OpenAI | None,
    *,
    ontology: Ontology = ONTOLOGY,
    stats: ExtractionStats | None = None,
) -> Extractor:
    """The :class:`OfflineExtractor` when ``llm_client`` is None, else an
    :class:`~workers.extraction.llm.LLMExtractor` on ``settings.llm_model`` with
    ``settings.llm_concurrency`` parallel calls (``Clients.llm`` is the client), falling
    back to the offline rules for a batch whose LLM call fails."""
    offline = OfflineExtractor(ontology)
    if llm_client is None:
        return offline
    from workers.extraction.llm import LLMExtractor  # openai is only needed on this path

    return LLMExtractor(
        llm_client,
        model=settings.llm_model,
        ontology=ontology,
        stats=stats,
        concurrency=settings.llm_concurrency,
        fallback=offline,
        max_output_tokens=settings.llm_max_output_tokens,
        max_tokens_parameter=settings.llm_max_tokens_parameter,
        temperature=settings.llm_temperature,
        cooldown_s=settings.llm_fallback_cooldown_s,
    )


def build_graph_store(clients: Clients, ontology: Ontology | None = None) -> BoltGraphStore:
    """The graph store on the process's driver, restricted to the ontology's labels and
    relationship types (the configured ontology unless one is given)."""
    ontology = ontology or load_ontology(clients.settings)
    return BoltGraphStore(
        clients.graph,
        clients.graph_database,
        entity_labels=ontology.labels(),
        relation_types=ontology.relationship_types(),
    )


def build_pipeline(clients: Clients, extractor: Extractor | None = None) -> IngestPipeline:
    """Schema set up (idempotent), writer and extractor wired; one per process.

    The extractor is the LLM one when an endpoint is configured, else the offline rules.
    """
    ontology = load_ontology(clients.settings)
    settings = clients.settings
    embedder = build_embedder(settings)
    ensure_schema(clients.graph, clients.graph_database, ontology.labels())
    # Full-text and vector indexes for people searching in Neo4j Browser; skipped on
    # other engines.
    on_neo4j = apply_neo4j_only(
        clients.graph,
        neo4j_only_statements(
            ontology.labels(),
            ontology.relationship_types(),
            embedding_dimension=embedder.dimension if embedder is not None else None,
        ),
        clients.graph_database,
    )
    return IngestPipeline(
        redis_client=clients.redis,
        store=build_graph_store(clients, ontology),
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
                GraphVectors(clients.graph, clients.graph_database, lists=bool(on_neo4j)),
            )
            if embedder is not None
            else None
        ),
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
    )


def build_distiller(clients: Clients) -> Distiller:
    """What maintenance jobs work with; the LLM summarizer when an endpoint is configured."""
    summarizer = None
    if clients.llm is not None:
        from workers.maintenance.llm_summary import LLMSummarizer

        summarizer = LLMSummarizer(clients.llm, model=clients.settings.llm_model)
    return Distiller(
        driver=clients.graph,
        database=clients.graph_database,
        redis=clients.redis,
        changes_stream=clients.settings.changes_stream,
        options=distill_options(clients.settings),
        summarizer=summarizer,
    )


def ingest_queue(clients: Clients) -> Queue:
    return Queue(
        clients.settings.ingest_queue,
        connection=clients.redis,
        serializer=JSONSerializer,
        job_class=TrustedJob,
    )


def build_ingest_worker(
    clients: Clients, pipeline: IngestPipeline | None = None
) -> BatchingIngestWorker:
    """No fork per job (warm graph connections); consecutive turns batched per transaction
    through ``pipeline`` (built from ``clients`` when not given)."""
    queue = ingest_queue(clients)
    requeue_expired_claims(clients.redis, queue)
    return BatchingIngestWorker(
        [queue],
        pipeline=pipeline or build_pipeline(clients),
        connection=clients.redis,
        serializer=JSONSerializer,
        maintenance_interval=INGEST_MAINTENANCE_INTERVAL_S,
        worker_ttl=INGEST_WORKER_TTL_S,
    )


def maintenance_queue(clients: Clients) -> Queue:
    return Queue(
        clients.settings.maintenance_queue,
        connection=clients.redis,
        serializer=JSONSerializer,
        job_class=MaintenanceJob,
    )


def build_maintenance_worker(clients: Clients) -> SimpleWorker:
    """Summaries, compaction, promotion, recap: the distiller installed for its jobs, and
    the next periodic compaction sweep scheduled (RQ's scheduler runs it)."""
    queue = maintenance_queue(clients)
    maintenance_context.install(build_distiller(clients))
    schedule_sweep(queue, clients.settings.compact_sweep_every_s)
    return SimpleWorker(
        [queue], connection=clients.redis, serializer=JSONSerializer, job_class=MaintenanceJob
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


def build_distill_gateway(clients: Clients) -> DistillGateway:
    """Turns clients' on-demand requests into jobs on the maintenance queue."""
    return DistillGateway(clients.redis, maintenance_queue(clients), DISTILL_REQUESTS)


def build_recall_worker(clients: Clients) -> RecallWorker:
    return RecallWorker(
        embedder=build_embedder(clients.settings),
        vectors=GraphVectors(clients.graph, clients.graph_database),
        redis_client=clients.redis,
        store=build_graph_store(clients),
        requests_key=clients.settings.recall_requests_key,
        changes_stream=clients.settings.changes_stream,
        reply_ttl_s=clients.settings.recall_reply_ttl_s,
    )
