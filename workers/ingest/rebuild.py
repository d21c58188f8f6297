"""Re-embed after a model change, without downtime (``turngraph embeddings rebuild``).

Pages through the turns whose stored vector is missing or of another model, embeds them
with the ingest workers' :class:`MemoryEmbedder` and announces each on the change stream
with its new vector. Safe to stop and run again: it resumes with what is still stale.
What the replicas do meanwhile: docs/recall.md ("The semantic signal").
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, cast

import redis

from turngraph.schemas.changes import MemoryRecord, MemoryUpsert, encode_change
from turngraph.schemas.defaults import CHANGES_MAXLEN
from turngraph.workers.embeddings.errors import EmbeddingUnavailableError
from turngraph.workers.ingest.embeddings import MemoryEmbedder

__all__ = ["RebuildReport", "rebuild_embeddings"]


@dataclass
class RebuildReport:
    embedded: int = 0
    pages: int = 0


def rebuild_embeddings(
    pages: Iterable[list[MemoryRecord]],
    embedder: MemoryEmbedder,
    redis_client: redis.Redis,
    changes_stream: str,
) -> RebuildReport:
    """Embed, store and announce each page of stale memories (``GraphVectors.stale``)."""
    report = RebuildReport()
    for memories in pages:
        failed = embedder.counters.failed + embedder.counters.skipped
        vectors = embedder.embed(memories)
        if embedder.counters.failed + embedder.counters.skipped > failed:
            raise EmbeddingUnavailableError("the embedder failed; run the rebuild again later")
        with redis_client.pipeline(transaction=False) as pipe:
            for memory in memories:
                change = MemoryUpsert(memory=memory, embedding=vectors.get(memory.id))
                pipe.xadd(
                    changes_stream,
                    cast(Any, encode_change(change)),
                    maxlen=CHANGES_MAXLEN,
                    approximate=True,
                )
            pipe.execute()
        report.embedded += len(vectors)
        report.pages += 1
    return report
