"""Which of an admission batch's turns are duplicates (docs/producers.md, "Duplicates"):
the ingested markers, the admitted markers and, for the re-published only, the graph and
the batch job's status."""

from __future__ import annotations

from collections.abc import Sequence

import redis
import structlog
from rq.exceptions import InvalidJobOperation
from rq.job import Job, JobStatus

from turngraph.producers.bounded_queue import admitted_hashes, ingested_key
from turngraph.schemas.errors import InvalidPayloadError, TurngraphError
from turngraph.workers.batch_store import entry_id
from turngraph.workers.ingest.markers import StoredLookup

__all__ = ["fresh_ids", "places"]

log = structlog.get_logger(__name__)

_LIVE = frozenset(
    {
        JobStatus.QUEUED,
        JobStatus.STARTED,
        JobStatus.DEFERRED,
        JobStatus.SCHEDULED,
        JobStatus.FINISHED,
    }
)
"""A turn in a batch job in one of these states is on its way to the graph: published
again, it is a duplicate. Failed, stopped or canceled batches may be published again."""


def places(
    tenant: str, batches: Sequence[Sequence[bytes]]
) -> tuple[list[dict[str, int]], int, int]:
    """Each batch's event ids (a tenant's qualified), each mapped to its entry: the last
    copy in the batch, in the first's place; an id an earlier batch holds is left out.
    Also the entries without a readable id (rejected) and the copies left out."""
    seen: set[str] = set()
    plans: list[dict[str, int]] = []
    rejected = repeated = 0
    for entries in batches:
        plan: dict[str, int] = {}
        for index, raw in enumerate(entries):
            try:
                event_id = entry_id(tenant, raw)
            except InvalidPayloadError as exc:
                rejected += 1
                log.warning("admission_entry_rejected", tenant=tenant, reason=str(exc))
                continue
            if event_id in seen or event_id in plan:
                repeated += 1
            if event_id not in seen:
                plan[event_id] = index
        seen.update(plan)
        plans.append(plan)
    return plans, rejected, repeated


def fresh_ids(
    conn: redis.Redis, ids: Sequence[str], stored: StoredLookup | None
) -> tuple[list[str], list[str]]:
    """The event ids neither in the graph nor waiting in a live batch job, and those
    among them whose ingested marker is stale: one ``MGET`` of the ingested markers
    and one ``HMGET`` per hash of admitted markers, in one round trip; a graph lookup
    and a batch job's status only for the (rare) re-published."""
    if not ids:
        return [], []
    with conn.pipeline(transaction=False) as pipe:
        pipe.mget([ingested_key(event_id) for event_id in ids])
        for key in admitted_hashes():
            pipe.hmget(key, ids)
        markers, *hashes = pipe.execute()
    # the newest hash's marker first (one turn admitted again has one per hash)
    job_ids = [next(filter(None, found), None) for found in zip(*hashes, strict=True)]
    live: dict[bytes, bool] = {}
    claimed = [i for i, marker in zip(ids, markers, strict=True) if marker is not None]
    in_graph = _in_graph(stored, claimed) if claimed else set()
    stale = [event_id for event_id in claimed if event_id not in in_graph]
    fresh = []
    for event_id, marker, job_id in zip(ids, markers, job_ids, strict=True):
        if marker is not None and event_id in in_graph:
            continue
        if job_id is not None:
            if job_id not in live:
                live[job_id] = _live(conn, job_id.decode("utf-8", "replace"))
            if live[job_id]:
                continue
        fresh.append(event_id)
    if stale:
        log.warning("admission_markers_stale", turns=len(stale))
    admitted = set(fresh)
    return fresh, [event_id for event_id in stale if event_id in admitted]


def _in_graph(stored: StoredLookup | None, event_ids: list[str]) -> set[str]:
    """Which of the turns their markers call ingested the graph holds: all of them
    without a lookup (admission alone); none when the graph does not answer (written
    again, idempotently, rather than lost)."""
    if not event_ids or stored is None:
        return set(event_ids)
    try:
        return stored(event_ids)
    except TurngraphError as exc:
        log.warning("admission_graph_lookup_failed", error=type(exc).__name__)
        return set()


def _live(conn: redis.Redis, job_id: str) -> bool:
    """True while the batch job is on its way to the graph (or done): not failed,
    stopped, canceled, or gone."""
    try:
        status = Job(job_id, connection=conn).get_status()
    except InvalidJobOperation:  # no job hash (expired, deleted)
        return False
    return status in _LIVE
