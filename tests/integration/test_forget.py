"""``forget`` leaves nothing of the scope behind, in the graph or in Redis, and leaves the
rest exactly as if the scope had never been ingested."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
import redis
from rq.job import Job
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

from tests.support.conversation import CONVERSATION, LATE_TURN, ingest, publish, snapshot
from tests.support.turns import turn
from turngraph.app import build_admission, build_graph_store, ingest_burst
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import is_ingested
from turngraph.schemas.changes import ScopeForgotten, decode_change
from turngraph.schemas.defaults import INGEST_FUNCTION
from turngraph.schemas.keys import ADMISSION_LIST_TEMPLATE, admission_lists
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.forget import forget_scope, mentions_scope
from turngraph.workers.graph.subgraph import EPISODE_SCOPE_PROPERTY

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]

CASES = [
    (Scope.SESSION, "s1"),  # its decision was later superseded
    (Scope.SESSION, "s2"),  # it superseded a decision: the old one is Active again
    (Scope.WORKSPACE, "w1"),
    (Scope.USER, "u1"),
]


def in_scope(scope: Scope, key: str) -> list[str]:
    field = EPISODE_SCOPE_PROPERTY[scope]
    return [e.event_id for e in [*CONVERSATION, LATE_TURN] if getattr(e, field) == key]


def forget(clients: Clients, scope: Scope, key: str) -> dict[str, int]:
    settings = clients.settings
    return forget_scope(
        redis_client=clients.redis,
        store=build_graph_store(clients),
        scope=scope,
        key=key,
        queues=[settings.ingest_queue, settings.maintenance_queue],
        changes_stream=settings.changes_stream,
    ).as_dict()


def graph_leftovers(clients: Clients, scope: Scope, key: str, event_ids: list[str]) -> int:
    field = EPISODE_SCOPE_PROPERTY[scope]
    checks = [
        f"MATCH (n) WHERE n.{field} = $key OR n.key = $key OR n.scope_key = $key "
        "RETURN count(n) AS c",
        "MATCH (n) WHERE any(x IN n.episode_ids WHERE x IN $ids) RETURN count(n) AS c",
        "MATCH (n) WHERE n.first_episode_id IN $ids RETURN count(n) AS c",
        "MATCH ()-[r]->() WHERE any(x IN r.episode_ids WHERE x IN $ids) RETURN count(r) AS c",
        "MATCH (n:Episode) WHERE n.event_id IN $ids RETURN count(n) AS c",
    ]
    total = 0
    for query in checks:
        records, _, _ = clients.graph.execute_query(
            query, key=key, ids=event_ids, database_=clients.graph_database
        )
        total += records[0]["c"]
    return total


def job_arguments(conn: redis.Redis, job_key: str) -> Any:
    """A job's arguments as RQ reads them (``Job.fetch``), None when it cannot."""
    try:
        job = Job.fetch(job_key.removeprefix("rq:job:"), connection=conn, serializer=JSONSerializer)
        return [list(job.args), job.kwargs]
    except Exception:
        return None


def list_entry(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return None


def redis_leftovers(clients: Clients, scope: Scope, key: str, event_ids: list[str]) -> list[str]:
    """Keys named after a forgotten turn, job hashes, inbox or admission list entries and
    stream entries carrying the scope."""
    conn, field, found = clients.redis, EPISODE_SCOPE_PROPERTY[scope], []
    for raw in conn.scan_iter(count=1_000):
        name = raw.decode()
        if (
            any(e in name for e in event_ids)
            or (
                name.startswith("rq:job:")
                and conn.type(raw) == b"hash"
                and mentions_scope(job_arguments(conn, name), field, key)
            )
            or (
                conn.type(raw) == b"list"
                and any(
                    mentions_scope(list_entry(entry), field, key)
                    for entry in conn.lrange(raw, 0, -1)
                )
            )
        ):
            found.append(name)
    for entry_id, fields in conn.xrange(clients.settings.changes_stream):
        memory = fields.get(b"memory")
        if memory and mentions_scope(json.loads(memory), field, key):
            found.append(f"stream entry {entry_id.decode()}")
    return found


@pytest.mark.parametrize(("scope", "key"), CASES, ids=lambda v: str(v))
def test_forget_leaves_nothing_and_the_rest_as_if_never_ingested(
    clients: Clients, scope: Scope, key: str
) -> None:
    field = EPISODE_SCOPE_PROPERTY[scope]
    forgotten = in_scope(scope, key)
    others = [e for e in CONVERSATION if getattr(e, field) != key]
    ingest(clients, others)
    never_ingested = snapshot(clients)
    clients.graph.execute_query("MATCH (n) DETACH DELETE n", database_=clients.graph_database)
    clients.redis.flushdb()

    ingest(clients, CONVERSATION)
    publish(clients, [LATE_TURN])
    assert graph_leftovers(clients, scope, key, forgotten) > 0
    assert redis_leftovers(clients, scope, key, forgotten)

    report = forget(clients, scope, key)

    assert graph_leftovers(clients, scope, key, forgotten) == 0
    assert redis_leftovers(clients, scope, key, forgotten) == []
    after = snapshot(clients)
    for item in sorted(after[0] ^ never_ingested[0], key=str):
        print("DIFF", "after" if item in after[0] else "never", item)
    assert after[0] ^ never_ingested[0] == set()
    assert after[1] ^ never_ingested[1] == set()
    assert report["nodes_deleted"] > 0
    if LATE_TURN.event_id in forgotten:  # still queued when forget ran
        assert report["jobs_deleted"] >= 1
    entries = [decode_change(f) for _, f in clients.redis.xrange(clients.settings.changes_stream)]
    assert ScopeForgotten(scope=scope, scope_key=key) in entries
    assert not any(e in json.dumps([x.model_dump(mode="json") for x in entries]) for e in forgotten)


def test_forget_is_idempotent_and_touches_no_other_scope(clients: Clients) -> None:
    ingest(clients, CONVERSATION)
    before_w2 = snapshot(clients)

    first = forget(clients, Scope.WORKSPACE, "w1")
    second = forget(clients, Scope.WORKSPACE, "w1")

    assert first["nodes_deleted"] > 0
    assert second["nodes_deleted"] == second["jobs_deleted"] == 0
    nodes, rels = snapshot(clients)
    assert nodes and nodes <= before_w2[0] and rels <= before_w2[1]
    # Nothing left names w1: no identity, no property (a packed vector's base64, whose
    # text can hold "w1" by chance, names nothing).
    left = [
        (identity, [(k, v) for k, v in props if k != "embedding_f32"]) for identity, props in nodes
    ]
    assert all("w1" not in str(node) for node in left)
    assert any(k == "embedding_f32" for _, props in nodes for k, _ in props)  # vectors were kept


def test_only_arguments_of_the_scope_match() -> None:
    event = {"session_id": "s1", "workspace": "w1", "user": "u1"}
    job = [INGEST_FUNCTION, None, [[event]], {}]
    assert mentions_scope(job, "session_id", "s1")
    assert not mentions_scope(job, "session_id", "s10")
    assert mentions_scope(["f", None, [], {"scope": "workspace", "key": "w1"}], "workspace", "w1")
    assert not mentions_scope("s1", "session_id", "s1")


def test_a_turn_being_ingested_meanwhile_is_reported(clients: Clients) -> None:
    ingest(clients, CONVERSATION[:1])
    publish(clients, [LATE_TURN])
    build_admission(clients, clients.redis).admit_all()  # its batch job waits in RQ's queue
    queue = clients.settings.ingest_queue
    # A worker took the late turn's batch off the queue and is running it right now.
    job_id = clients.redis.lpop(f"rq:queue:{queue}").decode()  # type: ignore[union-attr]
    started = StartedJobRegistry(queue, connection=clients.redis)
    clients.redis.zadd(started.key, {f"{job_id}:exec-1": time.time() + 600})

    report = forget(clients, Scope.SESSION, "s1")

    assert report["in_flight"] == 1


def test_a_batch_job_keeps_the_turns_of_other_scopes(clients: Clients) -> None:
    other = turn("unrelated: src/other.py", 0, session="s9", workspace="w9", user="u9")
    publish(clients, [LATE_TURN, other])
    build_admission(clients, clients.redis).admit_all()  # one batch job holds both

    report = forget(clients, Scope.SESSION, "s1")

    assert report["jobs_deleted"] == 1
    assert redis_leftovers(clients, Scope.SESSION, "s1", [LATE_TURN.event_id]) == []
    ingest_burst(clients)
    assert is_ingested(clients.redis, other.event_id)
    assert not is_ingested(clients.redis, LATE_TURN.event_id)


def test_a_dead_admitters_later_admission_list_is_purged(clients: Clients) -> None:
    other = turn("unrelated: src/other.py", 0, session="s9", workspace="w9", user="u9")
    pending = ADMISSION_LIST_TEMPLATE.format(source=f"operator:{clients.settings.ingest_queue}")
    later = admission_lists(pending)[3]  # a draining admitter's fourth batch, never written
    clients.redis.rpush(later, LATE_TURN.model_dump_json(), other.model_dump_json())

    forget(clients, Scope.SESSION, "s1")

    assert redis_leftovers(clients, Scope.SESSION, "s1", [LATE_TURN.event_id]) == []
    ingest_burst(clients)
    assert is_ingested(clients.redis, other.event_id)
    assert not is_ingested(clients.redis, LATE_TURN.event_id)
