"""An ingest pipeline and batching worker on real Redis with the in-memory graph store."""

from __future__ import annotations

import redis
from rq.queue import Queue
from rq.serializers import JSONSerializer

import turngraph.schemas.ontology as ontology
from turngraph.settings import Settings
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.graph.memory_store import InMemoryGraphStore
from turngraph.workers.ingest.batching import BatchingIngestWorker
from turngraph.workers.ingest.pipeline import IngestPipeline


def memory_store() -> InMemoryGraphStore:
    return InMemoryGraphStore(
        entity_labels=ontology.labels(), relation_types=ontology.relationship_types()
    )


def fake_graph_pipeline(
    conn: redis.Redis, settings: Settings, store: InMemoryGraphStore | None = None
) -> IngestPipeline:
    return IngestPipeline(
        redis_client=conn,
        store=store or memory_store(),
        extractor=OfflineExtractor(ontology.ONTOLOGY),
        changes_stream=settings.changes_stream,
    )


def ingest_worker(
    conn: redis.Redis, settings: Settings, pipeline: IngestPipeline, max_batch: int = 100
) -> BatchingIngestWorker:
    queue = Queue(settings.ingest_queue, connection=conn, serializer=JSONSerializer)
    return BatchingIngestWorker(
        [queue], pipeline=pipeline, max_batch=max_batch, connection=conn, serializer=JSONSerializer
    )


def episodes(store: InMemoryGraphStore) -> set[str]:
    return {n.props["event_id"] for n in store.nodes.values() if "Episode" in n.labels}
