"""``turngraph forget --scope session|workspace|user KEY``: delete a scope completely.

What goes (SPEC §8):

- in Redis, first, so nothing queued writes the scope back: its turns waiting in an inbox
  or an admission list, its turns in queued, failed, finished and deferred RQ jobs (an
  ingest batch job keeps the other scopes' turns; a job left with none, or a maintenance
  job of the scope, is deleted), the ingest markers of its turns, and its entries on the
  change stream (they carry the turns' text);
- in the graph: the scope's own nodes (see :mod:`workers.graph.subgraph`) with their
  relationships; elsewhere, the provenance its turns gave (an entity or fact that only
  these turns stated is deleted; one stated elsewhere too keeps only the other turns,
  and loses the summary or statement a forgotten turn wrote); a decision that only a
  forgotten decision had superseded is Active again;
- last, a ``forget`` entry on the change stream (every recall replica drops the scope),
  then the directive memories the deletion changed elsewhere (provenance pruned, Active
  again: upserts; stated only by forgotten turns: removals), so a replica fed by the
  stream holds what one bootstrapped from the graph holds. Stream entries of memories a
  forgotten turn stated are deleted too (they carry no session key).

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
from typing import Any

import redis
from rq.exceptions import NoSuchJobError
from rq.job import Job
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

from turngraph.producers.bounded_queue import admitted_key, ingested_key
from turngraph.producers.rq_internals import RQ_JOB_PREFIX, RQ_QUEUE_PREFIX
from turngraph.schemas.changes import (
    CHANGE_FIELD,
    ChangeEntry,
    MemoryRemoval,
    MemoryUpsert,
    ScopeForgotten,
    encode_change,
)
from turngraph.schemas.defaults import CHANGES_MAXLEN, INGEST_FUNCTION
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.schemas.keys import ADMISSION_LIST_TEMPLATE, INBOX_TEMPLATE
from turngraph.schemas.tenants import TENANTS_KEY, inbox_key, qualify
from turngraph.workers.graph.store import GraphStore
from turngraph.workers.graph.subgraph import EPISODE_SCOPE_PROPERTY, Scope
from turngraph.workers.tombstones import mark_forgotten

SCAN_BATCH = 1_000
"""Jobs or stream entries read per round trip."""

_REGISTRIES = (
    FailedJobRegistry,
    FinishedJobRegistry,
    DeferredJobRegistry,
    ScheduledJobRegistry,
    CanceledJobRegistry,
)


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


def _keep_other_turns(conn: redis.Redis, job_id: str, field: str, key: str) -> bool:
    """An ingest batch job keeps the turns of other scopes (RQ's ``Job.save``); False
    when it is not one or none is left (the caller deletes it). The scope's turns lose
    their admitted markers (keys named after them)."""
    try:
        job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
        if job.func_name != INGEST_FUNCTION or not job.args or not isinstance(job.args[0], list):
            return False
    except (NoSuchJobError, ValueError, TypeError):
        return False
    gone = [turn for turn in job.args[0] if mentions_scope(turn, field, key)]
    markers = [admitted_key(str(t.get("event_id"))) for t in gone if isinstance(t, dict)]
    if markers:
        conn.delete(*markers)
    kept = [turn for turn in job.args[0] if not mentions_scope(turn, field, key)]
    if not kept:
        return False
    job.args = (kept,)
    job.save()
    return True


def purge_jobs(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """Take the scope out of every waiting or kept RQ job (not one running right now);
    returns the jobs changed or deleted."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    deleted = 0
    for queue in queues:
        registry_keys = _registry_keys(conn, queue)
        for batch in _batches(_job_ids(conn, queue), SCAN_BATCH):
            pipe = conn.pipeline(transaction=False)
            for job_id in batch:
                pipe.hget(f"{RQ_JOB_PREFIX}{job_id}", "data")
            mentioning = [
                job_id
                for job_id, raw in zip(batch, pipe.execute(), strict=True)
                if mentions_scope(decode_job_data(raw), field, key)
            ]
            doomed = [j for j in mentioning if not _keep_other_turns(conn, j, field, key)]
            pipe = conn.pipeline(transaction=True)
            for job_id in doomed:
                pipe.lrem(f"{RQ_QUEUE_PREFIX}{queue}", 0, job_id)
                for registry_key in registry_keys:
                    pipe.zrem(registry_key, job_id)
                pipe.delete(*_job_keys(job_id))
            pipe.execute()
            deleted += len(mentioning)
    return deleted


def purge_inboxes(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """Remove the scope's turns from every inbox and admission list (a tenant's entries
    carry unqualified keys: compared qualified); returns how many."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    lists = [(INBOX_TEMPLATE.format(queue=q), "") for q in queues]
    lists += [(ADMISSION_LIST_TEMPLATE.format(source=f"operator:{q}"), "") for q in queues]
    tenants: Any = conn.smembers(TENANTS_KEY)
    for raw_name in tenants:
        tenant = raw_name.decode("utf-8", "replace")
        lists += [
            (inbox_key(tenant), tenant),
            (ADMISSION_LIST_TEMPLATE.format(source=tenant), tenant),
        ]
    removed = 0
    for list_key, tenant in lists:
        entries: Any = conn.lrange(list_key, 0, -1)
        for raw in entries:
            try:
                turn = json.loads(raw)
                own = turn.get(field) if isinstance(turn, dict) else None
            except ValueError:
                continue
            if isinstance(own, str) and (qualify(tenant, own) if tenant else own) == key:
                removed += int(conn.lrem(list_key, 0, raw))
    return removed


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


def purge_changes(
    conn: redis.Redis, stream: str, scope: Scope, key: str, event_ids: Iterable[str] = ()
) -> int:
    """Delete the change-stream entries that carry the scope's memories, or a memory that
    one of ``event_ids`` (the scope's turns) stated: a workspace or user level memory
    carries no session key, but its text or provenance may come from a forgotten turn."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    forgotten = set(event_ids)
    deleted, start = 0, "-"
    while True:
        entries: Any = conn.xrange(stream, min=start, max="+", count=SCAN_BATCH)
        doomed = []
        for entry_id, fields in entries:
            change = fields.get(CHANGE_FIELD.encode())
            body = json.loads(change) if change is not None else None
            if body is not None and (
                mentions_scope(body, field, key) or _stated_by(body, forgotten)
            ):
                doomed.append(entry_id)
        if doomed:
            deleted += int(conn.xdel(stream, *doomed))
        if len(entries) < SCAN_BATCH:
            return deleted
        start = "(" + entries[-1][0].decode()


def _stated_by(body: Any, event_ids: set[str]) -> bool:
    memory = body.get("memory") if isinstance(body, dict) else None
    sources = memory.get("source_event_ids") if isinstance(memory, dict) else None
    return isinstance(sources, list) and not event_ids.isdisjoint(map(str, sources))


def forget_scope(
    *,
    redis_client: redis.Redis,
    store: GraphStore,
    scope: Scope,
    key: str,
    queues: Sequence[str],
    changes_stream: str,
) -> ForgetReport:
    """Delete everything of the scope from Redis and the graph, then tell recall.

    Raises only ``schemas.errors`` types; after any error, forget again (idempotent).
    """
    try:
        return _forget_scope(
            redis_client=redis_client,
            store=store,
            scope=scope,
            key=key,
            queues=queues,
            changes_stream=changes_stream,
        )
    except redis.RedisError as exc:
        raise BackendUnavailableError("redis unavailable during forget: run it again") from exc


def _forget_scope(
    *,
    redis_client: redis.Redis,
    store: GraphStore,
    scope: Scope,
    key: str,
    queues: Sequence[str],
    changes_stream: str,
) -> ForgetReport:
    report = ForgetReport()
    mark_forgotten(redis_client, scope.value, key)  # first: nothing of the scope lands later
    report.jobs_deleted = purge_inboxes(redis_client, queues, scope, key)
    report.jobs_deleted += purge_jobs(redis_client, queues, scope, key)
    report.changes_deleted = purge_changes(redis_client, changes_stream, scope, key)
    deletion = store.delete_scope(scope, key)
    report.nodes_deleted, report.entities_pruned = deletion.nodes_deleted, deletion.entities_pruned
    forgotten = deletion.event_ids
    report.changes_deleted += purge_changes(
        redis_client, changes_stream, scope, key, event_ids=forgotten
    )
    report.in_flight = running_jobs(redis_client, queues, scope, key)
    for batch in _batches(forgotten, SCAN_BATCH):
        keys = [ingested_key(e) for e in batch]
        report.keys_deleted += int(redis_client.delete(*keys))
    # Then what the deletion changed outside the scope: directives whose provenance was
    # pruned (their text may have come from a forgotten turn) or that are Active again.
    changes: list[ChangeEntry] = [ScopeForgotten(scope=scope, scope_key=key)]
    changes += [MemoryRemoval(memory_id=uid) for uid in deletion.removed_memory_ids]
    changes += [MemoryUpsert(memory=memory) for memory in deletion.memories]
    with redis_client.pipeline(transaction=False) as pipe:
        for change in changes:
            event: dict[Any, Any] = encode_change(change)
            pipe.xadd(changes_stream, event, maxlen=CHANGES_MAXLEN, approximate=True)
        pipe.execute()
    return report
