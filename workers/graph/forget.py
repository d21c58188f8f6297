"""``turngraph forget --scope session|workspace|user KEY``: delete a scope completely.

Redis first (a tombstone, queued turns and RQ jobs through ``Job.delete``, markers,
change-stream entries), then the graph (the scope's nodes, the provenance its turns
gave), then a ``forget`` entry and the changed directive memories on the change stream.
Idempotent. What goes, in detail: docs/architecture.md ("Delivery", Forget).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import redis
from rq import Queue, Retry
from rq.job import Job, JobStatus
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

from turngraph.producers.bounded_queue import delete_admitted, ingested_key
from turngraph.schemas.changes import (
    CHANGE_FIELD,
    ChangeEntry,
    MemoryRemoval,
    MemoryUpsert,
    ScopeForgotten,
    encode_change,
)
from turngraph.schemas.defaults import (
    CHANGES_MAXLEN,
    INGEST_FUNCTION,
    JOB_TIMEOUT_S,
    RETRIES,
    RETRY_INTERVALS_S,
)
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.schemas.keys import (
    INBOX_TEMPLATE,
    admission_lists,
    operator_admission_list,
    tenant_admission_list,
)
from turngraph.schemas.tenants import TENANTS_KEY, inbox_key, qualify
from turngraph.workers.batch_store import batch_key, job_turns
from turngraph.workers.graph.store import GraphStore
from turngraph.workers.graph.subgraph import EPISODE_SCOPE_PROPERTY, Scope
from turngraph.workers.tombstones import (
    ADMITTED_EPOCH,
    admitted_epoch,
    hold_admission,
    mark_forgotten,
)

__all__ = [
    "SCAN_BATCH", "ForgetReport", "forget_scope", "mentions_scope", "purge_changes",
    "purge_inboxes", "purge_jobs", "running_jobs",
]  # fmt: skip

SCAN_BATCH = 1_000
"""Jobs or stream entries read per round trip."""

_DONE = (JobStatus.FINISHED, JobStatus.CANCELED)
"""A job in these states ran or will never run: its other turns need nothing more."""

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
    if isinstance(value, list | tuple):
        return any(mentions_scope(v, field, key, depth + 1) for v in value)
    return False


def _arguments(conn: redis.Redis, job_id: str) -> tuple[Job | None, list[Any]]:
    """The job (``Job.fetch``) and its arguments as RQ decodes them, with a batch job's
    stored turns; nothing when RQ cannot read it (its data names nothing RQ could run)."""
    try:
        job = Job.fetch(job_id, connection=conn, serializer=JSONSerializer)
        return job, [list(job.args), dict(job.kwargs), job_turns(conn, job)]
    except Exception:  # RQ's restore and deserializer raise whatever bad data does
        return None, []


def _scope_jobs(conn: redis.Redis, ids: Iterable[str], field: str, key: str) -> Iterator[Job]:
    """The jobs among ``ids`` whose arguments carry the scope."""
    for job_id in dict.fromkeys(ids):
        job, arguments = _arguments(conn, job_id)
        if job is not None and mentions_scope(arguments, field, key):
            yield job


def _other_turns(conn: redis.Redis, job: Job, field: str, key: str) -> list[Any]:
    """An ingest batch job's turns of other scopes; the scope's turns lose their admitted
    markers."""
    turns = job_turns(conn, job)
    gone = [turn for turn in turns if mentions_scope(turn, field, key)]
    delete_admitted(conn, [str(t.get("event_id")) for t in gone if isinstance(t, dict)])
    return [turn for turn in turns if not mentions_scope(turn, field, key)]


def _batch_like(job: Job, turns: list[Any]) -> Any:
    """RQ's ``Queue.prepare_data`` of a batch job like ``job`` holding ``turns`` (admitted
    under the same forget epoch)."""
    return Queue.prepare_data(
        INGEST_FUNCTION,
        args=(turns,),
        meta={ADMITTED_EPOCH: admitted_epoch(job) or 0},
        description=f"ingest_batch({len(turns)} turns)",
        timeout=int(job.timeout or JOB_TIMEOUT_S),
        result_ttl=job.result_ttl,
        failure_ttl=job.failure_ttl,
        retry=Retry(max=RETRIES, interval=list(RETRY_INTERVALS_S)),
    )


def purge_jobs(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """Take the scope out of every waiting or kept RQ job (not one running right now):
    each such job is deleted (``Job.delete``, its results too); an ingest batch job's
    turns of other scopes go back on the queue in a batch job of their own, unless the
    job had finished. Returns the jobs deleted."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    deleted = 0
    for name in queues:
        queue = Queue(name, connection=conn, serializer=JSONSerializer)
        registries = [r(name, connection=conn, serializer=JSONSerializer) for r in _REGISTRIES]
        ids = queue.get_job_ids()
        for registry in registries:
            ids += registry.get_job_ids(cleanup=False)
        for job in list(_scope_jobs(conn, ids, field, key)):
            kept = _other_turns(conn, job, field, key)
            if kept and job.get_status() not in _DONE:
                queue.enqueue_many([_batch_like(job, kept)])
            with conn.pipeline(transaction=True) as pipe:
                job.delete(pipeline=pipe)
                pipe.delete(batch_key(job.id))
                for registry in registries:
                    registry.remove(job.id, pipeline=pipe)
                pipe.execute()
            Result.delete_all(job)
            deleted += 1
    return deleted


def purge_inboxes(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """Remove the scope's turns from every inbox and admission list (a tenant's entries
    carry unqualified keys: compared qualified); returns how many."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    lists = [(INBOX_TEMPLATE.format(queue=q), "") for q in queues]
    for q in queues:
        lists += [(key, "") for key in admission_lists(operator_admission_list(q))]
    tenants: Any = conn.smembers(TENANTS_KEY)
    for raw_name in tenants:
        tenant = raw_name.decode("utf-8", "replace")
        lists.append((inbox_key(tenant), tenant))
        lists += [(key, tenant) for key in admission_lists(tenant_admission_list(tenant))]
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


def _admission_lists(conn: redis.Redis, queues: Iterable[str]) -> list[str]:
    """Every inbox's admission list: the operator's per queue, each tenant's."""
    tenants: Any = conn.smembers(TENANTS_KEY)
    return [operator_admission_list(q) for q in queues] + [
        tenant_admission_list(raw.decode("utf-8", "replace")) for raw in tenants
    ]


def running_jobs(conn: redis.Redis, queues: Iterable[str], scope: Scope, key: str) -> int:
    """How many jobs of the scope workers are running right now (they cannot be stopped)."""
    field = EPISODE_SCOPE_PROPERTY[scope]
    running = 0
    for queue in queues:
        registry = StartedJobRegistry(queue, connection=conn, serializer=JSONSerializer)
        ids = registry.get_job_ids(cleanup=False)
        running += sum(1 for _ in _scope_jobs(conn, ids, field, key))
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
        report = ForgetReport()
        # First the tombstone (the forget's epoch): turns admitted before it are skipped by
        # the worker, wherever their job is. Then the inboxes and admission lists, with the
        # admitters held off: one that took entries before the epoch has written their job
        # (purged next); what they admit afterwards was published after the forget began.
        mark_forgotten(redis_client, scope.value, key)
        with hold_admission(redis_client, _admission_lists(redis_client, queues)):
            report.jobs_deleted = purge_inboxes(redis_client, queues, scope, key)
        report.jobs_deleted += purge_jobs(redis_client, queues, scope, key)
        report.changes_deleted = purge_changes(redis_client, changes_stream, scope, key)
        deletion = store.delete_scope(scope, key)
        report.nodes_deleted = deletion.nodes_deleted
        report.entities_pruned = deletion.entities_pruned
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
    except redis.RedisError as exc:
        raise BackendUnavailableError("redis unavailable during forget: run it again") from exc
