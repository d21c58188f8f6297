"""The graph signal over one partition's entity postings (see ``index``): memories that
mention the query's entities, and the entities co-mentioned with them (one hop).

``memory_of`` returns a live memory by internal id, or ``None`` for a removed one (removed
ids linger in the entity postings until the partition is compacted).
"""

from __future__ import annotations

import heapq
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from operator import itemgetter

from turngraph.workers.recall.memory import SPAN_DIGESTS, Memory
from turngraph.workers.recall.postings import Hit, Partition, among_said, idf

__all__ = [
    "ENTITY_POSTINGS_CAP", "NEIGHBOUR_SAMPLE", "MemoryOf", "entity_hits", "entity_neighbours",
]  # fmt: skip

ENTITY_POSTINGS_CAP = 400
"""Newest memories taken per entity for the graph signal."""

NEIGHBOUR_SAMPLE = 50
"""Newest memories of an entity read to find the entities co-mentioned with it."""

MemoryOf = Callable[[int], Memory | None]


def entity_hits(
    part: Partition,
    entities: Mapping[str, float],
    memory_of: MemoryOf,
    *,
    limit: int,
    session_id: str | None = None,
    distilled_share: float = 1.0,
) -> list[Hit]:
    """Memories mentioning the given entity keys (weighted, rarer entities count more),
    the ``limit`` best of what was said and the restatements scoring among them (each
    kind from its own postings: ``Partition``).

    A span digest (summary, recap) holds the entities of all its turns, so it matches any
    entity its span named: its hits count ``distilled_share`` (0: it gets no graph signal;
    its turns carry the entities themselves)."""
    stated = part.entities
    weights = {key: w * idf(part.n_docs, len(stated.get(key, ()))) for key, w in entities.items()}
    said = _hits(stated, weights, memory_of, limit, session_id, 1.0)
    if not part.restated_entities:
        return said
    restated = _hits(part.restated_entities, weights, memory_of, limit, session_id, distilled_share)
    return among_said(said, restated, limit)


def _hits(
    postings: Mapping[str, array],
    weights: Mapping[str, float],
    memory_of: MemoryOf,
    limit: int,
    session_id: str | None,
    distilled_share: float,
) -> list[Hit]:
    acc: dict[int, float] = {}
    for key, w in weights.items():
        ents = postings.get(key)
        if not ents:
            continue
        for internal in ents[-ENTITY_POSTINGS_CAP:]:
            memory = memory_of(internal)
            if memory is None or (session_id and memory.session_id != session_id):
                continue
            share = distilled_share if memory.kind in SPAN_DIGESTS else 1.0
            if share > 0.0:
                acc[internal] = acc.get(internal, 0.0) + w * share
    return heapq.nlargest(limit, acc.items(), key=itemgetter(1))


def entity_neighbours(
    part: Partition, keys: Iterable[str], memory_of: MemoryOf, limit: int
) -> list[str]:
    """Entities co-mentioned with ``keys`` in the newest memories of what was said, most
    frequent first (a digest co-mentions every entity of its span)."""
    seeds = dict.fromkeys(keys)
    counts: Counter[str] = Counter()
    for key in seeds:
        for internal in part.entities.get(key, array("i"))[-NEIGHBOUR_SAMPLE:]:
            memory = memory_of(internal)
            if memory is not None:
                counts.update(e for e in memory.entities if e not in seeds)
    return [key for key, _ in counts.most_common(limit)]
