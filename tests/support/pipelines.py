"""An ingest pipeline, admission and ingest worker on real Redis with the in-memory graph
store."""

from __future__ import annotations

import redis
from rq.queue import Queue
from rq.serializers import JSONSerializer

import turngraph.schemas.ontology as ontology
from tests.support.memory_graph import InMemoryGraphStore
from turngraph.settings import Settings
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.ingest.admission import Admission
from turngraph.workers.ingest.batching import IngestWorker
from turngraph.workers.ingest.pipeline import IngestPipeline
from turngraph.workers.trusted_jobs import TrustedJob


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


def ingest_worker(conn: redis.Redis, settings: Settings, pipeline: IngestPipeline) -> IngestWorker:
    queue = Queue(settings.ingest_queue, connection=conn, serializer=JSONSerializer)
    return IngestWorker(
        [queue], pipeline=pipeline, connection=conn, serializer=JSONSerializer, job_class=TrustedJob
    )


def admission(conn: redis.Redis, settings: Settings, batch: int = 100) -> Admission:
    queue = Queue(settings.ingest_queue, connection=conn, serializer=JSONSerializer)
    return Admission(conn, queue, batch=batch)


def admit_and_work(admitter: Admission, worker: IngestWorker) -> None:
    """What ``turngraph worker ingest --burst`` does, with this worker."""
    admitter.burst(lambda: worker.work(burst=True, with_scheduler=False))


def episodes(store: InMemoryGraphStore) -> set[str]:
    return {n.props["event_id"] for n in store.nodes.values() if "Episode" in n.labels}
