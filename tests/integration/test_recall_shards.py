"""Recall replicas that serve a share (issue 24, docs/scaling.md), on the real Redis and
graph: a replica bootstraps, keeps and answers only its shards' partitions; a request
whose shard has no replica fails at once; forget, tenant isolation and the change stream
give the same answers sharded and unsharded; changing the shard count re-bootstraps."""

from __future__ import annotations

import dataclasses
import threading
import time

from tests.support.turns import turn
from turngraph.app import build_graph_store, build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.shard_push import LIBRARY_NAME
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.recall import RecallRequest
from turngraph.schemas.scopes import Scope
from turngraph.schemas.shards import NO_REPLICA, ShardSet, shard_of, shard_requests_key
from turngraph.schemas.tenants import TENANTS_KEY, qualify
from turngraph.workers.embeddings.factory import default_local_embedder
from turngraph.workers.graph.forget import forget_scope
from turngraph.workers.graph.vectors import GraphVectors
from turngraph.workers.recall.sharding import workspace_filter
from turngraph.workers.recall.worker import RecallWorker

TENANT = "acme"


def _workspaces(count: int, per_shard: int) -> dict[int, list[str]]:
    """Workspace names grouped by their shard out of ``count``."""
    found: dict[int, list[str]] = {shard: [] for shard in range(count)}
    n = 0
    while min(len(names) for names in found.values()) < per_shard:
        name = f"ws{n}"
        if len(found[shard_of(name, count)]) < per_shard:
            found[shard_of(name, count)].append(name)
        n += 1
    return found


def _replica(clients: Clients, shards: int, owned: str | None) -> RecallWorker:
    settings = clients.settings.model_copy(
        update={"recall_shards": shards, "recall_replica_shards": owned}
    )
    return build_recall_worker(dataclasses.replace(clients, settings=settings))


def _serve(workers: list[RecallWorker]) -> list[threading.Thread]:
    for worker in workers:
        worker.heartbeat()  # claims its shards now (the claim lasts 3 s; run() renews it)
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    return threads


def _stop(workers: list[RecallWorker], threads: list[threading.Thread]) -> None:
    for worker in workers:
        worker.stop()
    for thread in threads:
        thread.join(timeout=10)


def _held_workspaces(worker: RecallWorker) -> set[str]:
    return {m.workspace or "" for m in worker.index.snapshot().values()}


def test_a_replica_bootstraps_keeps_and_answers_only_its_shards(clients: Clients) -> None:
    names = _workspaces(2, 2)
    mine, theirs = names[0], names[1]
    pipeline = build_pipeline(clients)
    pipeline.ingest(
        [
            turn(f"The {ws} deploy uses blue green rollouts.", 0, session=f"s_{ws}", workspace=ws)
            for ws in mine + theirs
        ]
    )
    replica = _replica(clients, 2, "0")
    assert replica.bootstrap() == 2
    assert _held_workspaces(replica) == set(mine)
    pipeline.ingest(
        [
            turn(f"The {ws} cache is redis.", 1, session=f"s_{ws}", workspace=ws)
            for ws in mine + theirs
        ]
    )
    replica.apply_pending_changes(block_ms=1_000)
    assert _held_workspaces(replica) == set(mine) and len(replica.index) == 4
    assert replica.counters.changes_skipped == 2

    client = RecallClient(clients.redis, deadline_ms=5_000, shards=2)
    threads = _serve([replica])
    try:
        held = client.recall("which cache?", session_id=f"s_{mine[0]}", workspace=mine[0])
        started = time.perf_counter()
        missing = client.recall("which cache?", session_id=f"s_{theirs[0]}", workspace=theirs[0])
        missing_ms = (time.perf_counter() - started) * 1000
        # A client that routes with another count puts shard 1's request on shard 0's list.
        stray = RecallRequest(
            request_id="stray",
            reply_to="turngraph:recall:reply:stray",
            query="which cache?",
            workspace=theirs[0],
        )
        clients.redis.rpush(
            shard_requests_key(clients.settings.recall_requests_key, 0, 2), stray.model_dump_json()
        )
        refused = clients.redis.blpop(["turngraph:recall:reply:stray"], timeout=5)
    finally:
        _stop([replica], threads)
    assert held.success and held.results
    assert all(mine[0] in r.text for r in held.results)
    assert not missing.success and missing.degraded == [NO_REPLICA]
    assert missing.error_code == ErrorCode.BACKEND_UNAVAILABLE
    assert missing_ms < 50
    assert refused is not None and b"does not hold its workspace" in refused[1]
    assert replica.counters.refused_shard == 1
    assert clients.redis.zcard("turngraph:recall:shard-alive:0") == 0  # withdrawn on stop


def test_a_sharded_replicas_graph_read_returns_only_its_workspaces(clients: Clients) -> None:
    names = _workspaces(2, 2)
    mine, theirs = names[0], names[1]
    build_pipeline(clients).ingest(
        [
            turn(f"The {ws} deploy uses canary rollouts.", i, session=f"s_{ws}", workspace=ws)
            for ws in mine + theirs
            for i in range(2)
        ]
    )
    store = build_graph_store(clients)
    vectors = GraphVectors(clients.graph, clients.graph_database)
    model = default_local_embedder().model
    wanted = workspace_filter(ShardSet(2, frozenset({0})))
    assert workspace_filter(ShardSet.every(2)) is None  # every shard: the whole graph

    everything = list(store.recallable_memories())
    read = list(store.recallable_memories(wanted))
    assert {m.workspace for m in everything} == set(mine + theirs)
    assert {m.workspace for m in read} == set(mine)
    assert sorted(m.id for m in read) == sorted(m.id for m in everything if m.workspace in mine)

    all_vectors = dict(vectors.stored(model))
    own_vectors = dict(vectors.stored(model, wanted))
    assert len(all_vectors) == 8
    assert set(own_vectors) == {m.id for m in read}


def _answers(client: RecallClient, asks: list[tuple[str, str]]) -> list[list[str]]:
    found = []
    for query, workspace in asks:
        response = client.recall(query, workspace=workspace, scopes=("workspace",), max_results=10)
        assert response.success, response.user_message
        found.append(sorted(e for r in response.results for e in r.source_event_ids))
    return found


def test_forget_tenants_and_the_change_stream_behave_the_same_sharded(clients: Clients) -> None:
    names = _workspaces(2, 2)
    plain = names[0] + names[1]
    clients.redis.sadd(TENANTS_KEY, TENANT, "other")
    pipeline = build_pipeline(clients)
    turns = [
        turn(f"In {ws} the queue worker retries {n} times.", n, session=f"s_{ws}", workspace=ws)
        for ws in plain
        for n in range(3)
    ]
    turns += [
        turn(
            f"The tenant's queue worker retries {n} times.",
            n,
            session=qualify(TENANT, "ts"),
            workspace=qualify(TENANT, "tws"),
            user=qualify(TENANT, "tu"),
        )
        for n in range(2)
    ]
    pipeline.ingest(turns[:8])
    # The unsharded replica pops the unsharded lists, the sharded ones their shards':
    # both deployments serve side by side on one Redis and one graph.
    sharded = [_replica(clients, 2, "0"), _replica(clients, 2, "1")]
    unsharded = _replica(clients, 1, None)
    for replica in [*sharded, unsharded]:
        replica.bootstrap()
    pipeline.ingest(turns[8:])  # the rest reaches the replicas through the change stream
    for replica in [*sharded, unsharded]:
        replica.apply_pending_changes(block_ms=1_000)
    held = [_held_workspaces(r) for r in sharded]
    assert held[0].isdisjoint(held[1]) and held[0] | held[1] == _held_workspaces(unsharded)

    asks = [("queue worker retries", ws) for ws in plain]
    operator = [RecallClient(clients.redis, deadline_ms=5_000, shards=n) for n in (1, 2)]
    tenant = [
        RecallClient.for_tenant(clients.redis, TENANT, deadline_ms=5_000, shards=n) for n in (1, 2)
    ]
    other = [
        RecallClient.for_tenant(clients.redis, "other", deadline_ms=5_000, shards=n) for n in (1, 2)
    ]
    threads = _serve([*sharded, unsharded])
    try:
        before = [_answers(c, asks) for c in operator]
        own = [_answers(c, [("queue worker retries", "tws")]) for c in tenant]
        foreign = [_answers(c, [("queue worker retries", "tws")]) for c in other]
        forget_scope(
            redis_client=clients.redis,
            store=build_graph_store(clients),
            scope=Scope.WORKSPACE,
            key=plain[0],
            queues=[clients.settings.ingest_queue],
            changes_stream=clients.settings.changes_stream,
        )
        deadline = time.monotonic() + 10
        after = [_answers(c, asks) for c in operator]
        while any(a[0] for a in after) and time.monotonic() < deadline:  # stream applied
            after = [_answers(c, asks) for c in operator]
    finally:
        _stop([*sharded, unsharded], threads)
    assert before[0] == before[1] and all(before[0])
    assert own[0] == own[1] and len(own[0][0]) == 2  # the tenant sees its own turns
    assert foreign == [[[]], [[]]]  # another tenant naming the same workspace: nothing
    assert after[0] == after[1] and after[0][0] == [] and after[0][1:] == before[0][1:]


def test_changing_the_shard_count_re_bootstraps_each_replica_to_its_new_share(
    clients: Clients,
) -> None:
    names = [f"ws{n}" for n in range(12)]
    build_pipeline(clients).ingest(
        [turn(f"{ws} ships on fridays.", 0, session=f"s_{ws}", workspace=ws) for ws in names]
    )
    before = [_replica(clients, 2, str(s)) for s in range(2)]
    for replica in before:
        replica.bootstrap()
    assert sorted(len(r.index) for r in before) != [0, 12]
    # Stop, change TURNGRAPH_RECALL_SHARDS (3), start: each replica reads its new share.
    after = [_replica(clients, 3, str(s)) for s in range(3)]
    for shard, replica in enumerate(after):
        replica.bootstrap()
        assert _held_workspaces(replica) == {ws for ws in names if shard_of(ws, 3) == shard}
    assert sum(len(r.index) for r in after) == 12
    client = RecallClient(clients.redis, deadline_ms=5_000, shards=3)
    threads = _serve(after)
    try:
        answers = [
            client.recall("when does it ship?", workspace=ws, scopes=("workspace",)) for ws in names
        ]
    finally:
        _stop(after, threads)
    assert all(a.success and len(a.results) == 1 for a in answers)


def test_a_sharded_replica_reloads_the_clients_push_when_redis_lost_it(
    clients: Clients,
) -> None:
    replica = _replica(clients, 2, "0")
    replica.heartbeat()  # loads the push, then claims shard 0 (not serving: nobody pops)
    workspace = _workspaces(2, 1)[0][0]
    client = RecallClient(clients.redis, deadline_ms=100, shards=2)
    key = shard_requests_key(clients.settings.recall_requests_key, 0, 2)

    def ask() -> list[str]:
        return client.recall("which cache?", workspace=workspace).degraded

    assert ask() == ["deadline_exceeded"] and clients.redis.llen(key) == 1  # pushed
    clients.redis.function_delete(LIBRARY_NAME)  # e.g. a Redis restarted without its data
    assert ask() == [NO_REPLICA] and clients.redis.llen(key) == 1  # no push, no wait
    replica.heartbeat()
    assert ask() == ["deadline_exceeded"] and clients.redis.llen(key) == 2
