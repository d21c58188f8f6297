"""``turngraph forget --scope session|workspace|user KEY``: delete a scope completely.

What goes (SPEC §8):

- in Redis, first, so nothing queued writes the scope back: its queued, failed, finished
  and deferred RQ jobs (ingest and maintenance queues), the ingest markers of its turns,
  and its entries on the change stream (they carry the turns' text);
- in the graph: the scope's own nodes (see :mod:`workers.graph.subgraph`) with their
  relationships; elsewhere, the provenance its turns gave (an entity or fact that only
  these turns stated is deleted; one stated elsewhere too keeps only the other turns,
  and loses the summary or statement a forgotten turn wrote); a decision that only a
  forgotten decision had superseded is Active again;
- last, a ``forget`` event on the change stream: every recall replica drops the scope.

Idempotent: rerun after a failure and it finishes the job. A turn of the scope that a
worker is ingesting at this very moment can still land afterwards: forget again once the
producers of the scope have stopped.
"""

from __future__ import annotations

import contextlib
import json
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, cast

import neo4j
import redis
from rq.registry import (
    CanceledJobRegistry,
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)
from rq.results import Result
from rq.serializers import JSONSerializer

from producers.bounded_queue import ingested_key
from schemas.defaults import CHANGES_MAXLEN
from schemas.keys import RQ_JOB_PREFIX, RQ_QUEUE_PREFIX
from workers.graph.retry import run_write
from workers.graph.subgraph import (
    EPISODE_SCOPE_PROPERTY,
    Scope,
    mentioned_ids,
    own_node_ids,
    scope_node_ids,
    workspace_ids_of,
)
from workers.recall.memory import Change, MemoryScope
from workers.tombstones import mark_forgotten

DELETE_BATCH = 500
"""Nodes per write transaction: a large scope is deleted in many small transactions."""

SCAN_BATCH = 1_000
"""Jobs or stream entries read per round trip."""

_REGISTRIES = (
    FailedJobRegistry,
    FinishedJobRegistry,
    DeferredJobRegistry,
    ScheduledJobRegistry,
    CanceledJobRegistry,
)

PRUNE_FACTS = """
UNWIND $ids AS id
MATCH (a) WHERE elementId(a) = id
MATCH (a)-[r]-() WHERE any(x IN r.episode_ids WHERE x IN $forgotten)
WITH DISTINCT r
WITH r, [x IN r.episode_ids WHERE NOT x IN $forgotten] AS after,
     r.episode_ids[0] IN $forgotten AS stated_by_forgotten
SET r.episode_ids = after,
    r.statement = CASE WHEN stated_by_forgotten THEN '' ELSE r.statement END
WITH r, after WHERE size(after) = 0
DELETE r
"""

PRUNE_ENTITIES = """
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id
WITH n, [x IN n.episode_ids WHERE NOT x IN $forgotten] AS after,
     n.episode_ids[0] IN $forgotten AS created_by_forgotten
WHERE size(after) < size(n.episode_ids)
SET n.episode_ids = after, n.mentions = size(after),
    n.summary = CASE WHEN created_by_forgotten THEN '' ELSE n.summary END,
    n.aliases = CASE WHEN created_by_forgotten THEN [] ELSE n.aliases END
WITH n, after WHERE size(after) = 0
DETACH DELETE n
"""

REACTIVATE_DECISIONS = """
UNWIND $ids AS id
MATCH (d:Decision) WHERE elementId(d) = id AND d.status = 'Superseded'
  AND NOT EXISTS { MATCH (d)<-[:SUPERSEDES]-(:Decision) }
SET d.status = 'Active'
REMOVE d.invalid_at
"""

EVENT_IDS_BY_SCOPE = "MATCH (e:Episode {{{prop}: $key}}) RETURN e.event_id AS id"

DELETE_NODES = "UNWIND $ids AS id MATCH (n) WHERE elementId(n) = id DETACH DELETE n"

SUPERSEDED_BY = """
UNWIND $ids AS id
MATCH (n) WHERE elementId(n) = id
MATCH (n)-[:SUPERSEDES]->(old:Decision)
RETURN DISTINCT elementId(old) AS id
"""

DELETE_EMPTY_WORKSPACES = """
UNWIND $ids AS id
MATCH (w:Workspace) WHERE elementId(w) = id AND NOT EXISTS { MATCH (w)<-[:IN_WORKSPACE]-() }
DETACH DELETE w
"""


@dataclass
class ForgetReport:
    nodes_deleted: int = 0
    entities_pruned: int = 0
    jobs_deleted: int = 0
    keys_deleted: int = 0
    changes_deleted: int = 0
    in_flight: int = 0
    """Jobs of the scope a worker was running meanwhile: forget again once they end."""

    def as_dict(self) -> dict[str, int]:
        return dict(self.__dict__)


def _batches(items: Sequence[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


# -- Redis ------------------------------------------------------------------------------


def decode_job_data(raw: bytes | None) -> Any:
    if raw is None:
        return None
    with contextlib.suppress(zlib.error):  # short payloads are stored uncompressed
        raw = zlib.decompress(raw)
    try:
        return json.loads(raw)
    except ValueError:
        return None


def mentions_scope(value: Any, field: str, key: str, depth: int = 0) -> bool:
    """True if a job's arguments carry the scope: a mapping with ``field == key``
    (a TurnEvent's ``session_id``/``workspace``/``user``), or ``{"scope", "key"}``."""
    if depth > 4:
        return False
    if isinstance(value, dict):
        if value.get(field) == key:
            return True
        if value.get("key") == key and value.get("scope") in tuple(Scope):
            return True
        return any(mentions_scope(v, field, key, depth + 1) for v in value.values())
    if isinstance(value, list):
        return any(mentions_scope(v, field, key, depth + 1) for v in value)
    return False


def _registry_keys(conn: redis.Redis, queue: str) -> list[str]:
    return [r(queue, connection=conn, serializer=JSONSerializer).key for r in _REGISTRIES]


def _job_ids(conn: redis.Redis, queue: str) -> list[str]:
    queued: Any = conn.lrange(f"{RQ_QUEUE_PREFIX}{queue}", 0, -1)
    ids = [i.decode() for i in queued]
    for registry_key in _registry_keys(conn, queue):
        kept: Any = conn.zrange(registry_key, 0, -1)
        ids += [i.decode() for i in kept]
    return list(dict.fromkeys(ids))


def _job_keys(job_id: str) -> list[str]:
    """Every key RQ keeps for one job: its hash, dependency sets and result stream."""
    job_key = f"{RQ_JOB_PREFIX}{job_id}"
    return [job_key, f"{job_key}:dependents", f"{job_key}:dependencies", Result.get_key(job_id)]


def purge_jobs(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """Delete every waiting or kept RQ job of the scope (not one running right now)."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    deleted = 0
    for queue in queues:
        registry_keys = _registry_keys(conn, queue)
        for batch in _batches(_job_ids(conn, queue), SCAN_BATCH):
            pipe = conn.pipeline(transaction=False)
            for job_id in batch:
                pipe.hget(f"{RQ_JOB_PREFIX}{job_id}", "data")
            doomed = [
                job_id
                for job_id, raw in zip(batch, pipe.execute(), strict=True)
                if mentions_scope(decode_job_data(raw), field, key)
            ]
            pipe = conn.pipeline(transaction=True)
            for job_id in doomed:
                pipe.lrem(f"{RQ_QUEUE_PREFIX}{queue}", 0, job_id)
                for registry_key in registry_keys:
                    pipe.zrem(registry_key, job_id)
                pipe.delete(*_job_keys(job_id))
            pipe.execute()
            deleted += len(doomed)
    return deleted


def running_jobs(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """How many jobs of the scope workers are running right now (they cannot be stopped)."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    running = 0
    for queue in queues:
        ids = StartedJobRegistry(queue, connection=conn, serializer=JSONSerializer).get_job_ids()
        for job_id in ids:
            raw: Any = conn.hget(f"{RQ_JOB_PREFIX}{job_id}", "data")
            running += mentions_scope(decode_job_data(raw), field, key)
    return running


def purge_changes(conn: redis.Redis, stream: str, scope: Scope, key: str) -> int:
    """Delete the change-stream entries that carry the scope's memories."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    deleted, start = 0, "-"
    while True:
        entries: Any = conn.xrange(stream, min=start, max="+", count=SCAN_BATCH)
        doomed = []
        for entry_id, fields in entries:
            memory = fields.get(b"memory")
            if memory is not None and mentions_scope(json.loads(memory), field, key):
                doomed.append(entry_id)
        if doomed:
            deleted += int(conn.xdel(stream, *doomed))
        if len(entries) < SCAN_BATCH:
            return deleted
        start = "(" + entries[-1][0].decode()


# -- graph ------------------------------------------------------------------------------


def scope_event_ids(
    driver: neo4j.Driver, database: str | None, scope: Scope, key: str
) -> list[str]:
    prop = EPISODE_SCOPE_PROPERTY[scope]
    records, _, _ = driver.execute_query(
        EVENT_IDS_BY_SCOPE.format(prop=prop),
        key=key,
        database_=database,
        routing_=neo4j.RoutingControl.READ,
    )
    return [r["id"] for r in records]


def _write(driver: neo4j.Driver, database: str | None, query: str, **params: Any) -> int:
    def work(tx: neo4j.ManagedTransaction) -> int:
        summary = tx.run(query, params).consume()
        return int(summary.counters.nodes_deleted)

    return run_write(driver, database, work)


def _ids_from(
    driver: neo4j.Driver, database: str | None, query: str, ids: Sequence[str]
) -> list[str]:
    found: dict[str, None] = {}
    for batch in _batches(ids, DELETE_BATCH):
        records, _, _ = driver.execute_query(
            query, ids=batch, database_=database, routing_=neo4j.RoutingControl.READ
        )
        found.update(dict.fromkeys(r["id"] for r in records))
    return list(found)


def forget_graph(
    driver: neo4j.Driver,
    database: str | None,
    scope: Scope,
    key: str,
    entity_labels: Iterable[str],
) -> tuple[int, int, list[str]]:
    """Delete the scope from the graph: (nodes deleted, entities pruned, event ids)."""
    forgotten = scope_event_ids(driver, database, scope, key)
    own = own_node_ids(driver, database, scope, key, entity_labels)
    own_set = set(own)
    neighbours = [i for i in mentioned_ids(driver, database, own) if i not in own_set]
    touched = [*own, *neighbours]
    # Decisions a doomed decision superseded, and workspaces a doomed session was in:
    # once the scope is gone they may stand alone again.
    superseded = _ids_from(driver, database, SUPERSEDED_BY, touched)
    workspaces = workspace_ids_of(driver, database, own)
    deleted = pruned = 0
    if forgotten:
        for batch in _batches(neighbours, DELETE_BATCH):
            _write(driver, database, PRUNE_FACTS, ids=batch, forgotten=forgotten)
            pruned += _write(driver, database, PRUNE_ENTITIES, ids=batch, forgotten=forgotten)
    # The scope node goes last: a rerun after a failure still finds the rest by key.
    scope_nodes = set(scope_node_ids(driver, database, scope, key))
    ordered = [i for i in own if i not in scope_nodes] + [i for i in own if i in scope_nodes]
    for batch in _batches(ordered, DELETE_BATCH):
        deleted += _write(driver, database, DELETE_NODES, ids=batch)
    for batch in _batches(superseded, DELETE_BATCH):
        _write(driver, database, REACTIVATE_DECISIONS, ids=batch)
    for batch in _batches(workspaces, DELETE_BATCH):
        deleted += _write(driver, database, DELETE_EMPTY_WORKSPACES, ids=batch)
    return deleted, pruned, forgotten


def forget_scope(
    *,
    redis_client: redis.Redis,
    driver: neo4j.Driver,
    database: str | None,
    scope: Scope,
    key: str,
    entity_labels: Iterable[str],
    queues: Sequence[str],
    changes_stream: str,
) -> ForgetReport:
    """Delete everything of the scope from Redis and the graph, then tell recall."""
    report = ForgetReport()
    mark_forgotten(redis_client, scope.value, key)  # first: nothing of the scope lands later
    report.jobs_deleted = purge_jobs(redis_client, queues, scope, key)
    report.changes_deleted = purge_changes(redis_client, changes_stream, scope, key)
    deleted, pruned, forgotten = forget_graph(driver, database, scope, key, entity_labels)
    report.nodes_deleted, report.entities_pruned = deleted, pruned
    report.in_flight = running_jobs(redis_client, queues, scope, key)
    # The job of an ingested turn is named after it; a batching worker may have claimed
    # it off the queue, so it is found by name rather than in a registry.
    for batch in _batches(forgotten, SCAN_BATCH):
        keys = [k for e in batch for k in (ingested_key(e), *_job_keys(e))]
        report.keys_deleted += int(redis_client.delete(*keys))
    event: dict[Any, Any] = Change.forget(cast(MemoryScope, scope.value), key).to_fields()
    redis_client.xadd(
        changes_stream,
        event,
        maxlen=CHANGES_MAXLEN,
        approximate=True,
    )
    return report
