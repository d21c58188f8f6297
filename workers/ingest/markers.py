"""The ingested markers kept true to the graph they describe.

A marker (``turngraph:ingested:<event id>``) saves admission a write; it never decides
alone that the turn exists. An ingest worker that starts on a graph of another identity
(:data:`~schemas.keys.GRAPH_IDENTITY`: new, wiped, another engine's) checks every marker
against it and drops those of turns it lacks. docs/operations.md ("Changing the graph").
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import structlog

from turngraph.producers.bounded_queue import ingested_key
from turngraph.schemas.keys import GRAPH_IDENTITY, INGESTED_PREFIX
from turngraph.workers.graph.identity import GraphIdentity

__all__ = [
    "MarkerCheck", "StoredLookup", "check_markers", "reconcile_markers", "record_identity",
    "recorded_identity",
]  # fmt: skip

log = structlog.get_logger(__name__)

StoredLookup = Callable[[Sequence[str]], "set[str]"]
"""Which of these event ids have an Episode in the graph."""

CHECK_BATCH = 1_000
"""Markers checked against the graph per lookup."""

DOCTOR_SAMPLE = 500
"""Markers ``turngraph doctor`` checks (the first the scan finds)."""


@dataclass(frozen=True)
class MarkerCheck:
    """Markers looked at, and those whose turn the graph does not hold."""

    checked: int
    missing: int


def recorded_identity(conn: redis.Redis) -> GraphIdentity | None:
    """The identity of the graph the markers were last checked against (None: never)."""
    raw: Any = conn.hgetall(GRAPH_IDENTITY)
    fields = {k.decode(): v.decode() for k, v in raw.items()}
    if not fields.get("graph_id"):
        return None
    return GraphIdentity(fields["graph_id"], fields.get("engine", "?"))


def record_identity(conn: redis.Redis, identity: GraphIdentity) -> None:
    conn.hset(GRAPH_IDENTITY, mapping={"graph_id": identity.graph_id, "engine": identity.engine})


def _marker_ids(conn: redis.Redis, limit: int | None = None) -> Iterator[list[str]]:
    """Event ids of the markers, in batches (a SCAN: never blocks Redis)."""
    batch: list[str] = []
    keys = conn.scan_iter(match=INGESTED_PREFIX + "*", count=CHECK_BATCH)
    for seen, raw in enumerate(keys, 1):
        batch.append(raw.decode("utf-8", "replace")[len(INGESTED_PREFIX) :])
        if len(batch) == CHECK_BATCH or (limit is not None and seen >= limit):
            yield batch
            batch = []
            if limit is not None and seen >= limit:
                return
    if batch:
        yield batch


def check_markers(
    conn: redis.Redis, stored: StoredLookup, *, limit: int | None = DOCTOR_SAMPLE
) -> MarkerCheck:
    """Check up to ``limit`` markers (None: all) against the graph; changes nothing."""
    checked = missing = 0
    for ids in _marker_ids(conn, limit):
        checked += len(ids)
        missing += len(set(ids) - stored(ids))
    return MarkerCheck(checked, missing)


def reconcile_markers(conn: redis.Redis, identity: GraphIdentity, stored: StoredLookup) -> int:
    """At an ingest worker's start: if the markers were recorded against another graph (or
    none), drop every marker whose turn ``identity``'s graph lacks, then record it.
    Returns the markers dropped. Redis away: nothing done, said in one warning (admission
    still checks each marker it finds against the graph; the next start reconciles)."""
    try:
        return _reconcile(conn, identity, stored)
    except redis.RedisError as exc:
        log.warning("graph_markers_not_reconciled", error=type(exc).__name__)
        return 0


def _reconcile(conn: redis.Redis, identity: GraphIdentity, stored: StoredLookup) -> int:
    previous = recorded_identity(conn)
    if previous is not None and previous.graph_id == identity.graph_id:
        return 0
    dropped = checked = 0
    for ids in _marker_ids(conn):
        checked += len(ids)
        gone = sorted(set(ids) - stored(ids))
        if gone:
            dropped += int(conn.delete(*(ingested_key(e) for e in gone)))
    record_identity(conn, identity)
    if previous is not None or dropped:
        log.warning(
            "graph_changed_markers_dropped",
            previous=previous.describe() if previous else "none recorded",
            graph=identity.describe(),
            checked=checked,
            dropped=dropped,
        )
    return dropped
