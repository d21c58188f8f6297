"""A tenant's producers publish into its bounded inbox; admission makes the RQ batch jobs.

The inbox's guarantees hold per tenant (bound never exceeded, both policies, exact
accounting), and admission writes jobs only with our function, the tenant taken from the
inbox it read, keys qualified by tenant.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator

import pytest
import redis
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from tests.support.turns import turn
from turngraph.credentials import issue
from turngraph.producers.publisher import Publisher
from turngraph.producers.tenant_inbox import TenantInbox, read_inbox_stats
from turngraph.schemas.defaults import INGEST_FUNCTION, DropPolicy
from turngraph.schemas.keys import ADMISSION_LIST_TEMPLATE
from turngraph.schemas.tenants import inbox_key, qualify
from turngraph.settings import Settings
from turngraph.workers.batch_store import job_turns
from turngraph.workers.ingest.admission import MAX_QUEUED_BATCHES, Admission

pytestmark = pytest.mark.integration

QUEUE = "tg-tenant-ingest"


def _connect(settings: Settings, admin: redis.Redis, tenant: str) -> redis.Redis:
    assert settings.redis_url
    return redis.Redis.from_url(issue(admin, tenant).redis_url(settings.redis_url))


@pytest.fixture
def acme(settings: Settings, redis_conn: redis.Redis) -> Iterator[redis.Redis]:
    conn = _connect(settings, redis_conn, "acme")
    yield conn
    conn.close()


def _admission(admin: redis.Redis, batch: int = 100) -> Admission:
    return Admission(admin, Queue(QUEUE, connection=admin, serializer=JSONSerializer), batch=batch)


def _queued(conn: redis.Redis) -> list[dict[str, object]]:
    """The turns in RQ's queue, batch by batch, in order."""
    ids = [i.decode() for i in conn.lrange(f"rq:queue:{QUEUE}", 0, -1)]
    jobs = [Job.fetch(i, connection=conn, serializer=JSONSerializer) for i in ids]
    assert all(job.func_name == INGEST_FUNCTION for job in jobs)
    return [payload for job in jobs for payload in job_turns(conn, job)]


def _balanced(stats: object) -> bool:
    s = stats
    return bool(
        s.published == s.enqueued + s.dropped_newest + s.duplicates + s.rejected  # type: ignore[attr-defined]
    )


@pytest.mark.parametrize("policy", [DropPolicy.DROP_NEWEST, DropPolicy.DROP_OLDEST])
def test_the_inbox_bound_holds_and_every_event_is_counted(
    acme: redis.Redis, redis_conn: redis.Redis, policy: DropPolicy
) -> None:
    publisher = Publisher(
        redis=acme, tenant="acme", max_queue_length=50, drop_policy=policy, batch_size=16
    )
    for index in range(400):
        publisher.publish(turn(f"turn {index}", index))
    assert publisher.flush(timeout_s=20)
    publisher.close()
    stats = read_inbox_stats(acme, "acme")
    assert stats.length == 50 and stats.published == 400
    assert stats.accepted + stats.dropped + stats.duplicates == stats.published
    entries = [json.loads(e)["turn_index"] for e in redis_conn.lrange(inbox_key("acme"), 0, -1)]
    expected = list(range(50)) if policy is DropPolicy.DROP_NEWEST else list(range(350, 400))
    assert entries == expected


def test_admission_writes_our_job_for_the_inbox_tenant_with_qualified_keys(
    acme: redis.Redis, redis_conn: redis.Redis
) -> None:
    event = turn("a turn of acme", 3, session="s_x", workspace="w_x", user="u_x")
    TenantInbox(acme, tenant="acme", max_length=10).enqueue_many([event])
    assert _admission(redis_conn).admit_all() == 1

    (payload,) = _queued(redis_conn)
    assert payload["event_id"] == qualify("acme", event.event_id)
    assert (payload["session_id"], payload["workspace"], payload["user"]) == (
        "t-acme-s_x",
        "t-acme-w_x",
        "t-acme-u_x",
    )
    assert payload["content"] == "a turn of acme"
    stats = read_inbox_stats(acme, "acme")
    assert (stats.length, stats.enqueued, stats.admitted) == (0, 1, 1) and _balanced(stats)
    assert not redis_conn.exists(ADMISSION_LIST_TEMPLATE.format(source="acme"))


def test_two_tenants_with_the_same_ids_never_collide(
    settings: Settings, acme: redis.Redis, redis_conn: redis.Redis
) -> None:
    other = _connect(settings, redis_conn, "other")
    event = turn("same ids", 0)
    TenantInbox(acme, tenant="acme", max_length=10).enqueue_many([event])
    TenantInbox(other, tenant="other", max_length=10).enqueue_many([event])
    admission = _admission(redis_conn)
    assert admission.admit_all() == 2
    assert admission.counters.admitted == 2 and admission.counters.duplicates == 0
    assert sorted(str(p["event_id"]) for p in _queued(redis_conn)) == sorted(
        [qualify("acme", event.event_id), qualify("other", event.event_id)]
    )


def test_duplicates_and_unreadable_entries_are_counted_exactly(
    acme: redis.Redis, redis_conn: redis.Redis
) -> None:
    inbox = TenantInbox(acme, tenant="acme", max_length=100)
    admission = _admission(redis_conn)
    inbox.enqueue_many([turn("first", 0), turn("second", 1)])
    admission.admit_all()
    keys, args = inbox.script_call([])
    hostile = [  # the first two have no event id: refused at admission
        b"not json",
        b'{"session_id": "s"}',
        # these have one: admitted, then dead-lettered by the worker (test_admission_batches)
        json.dumps({**turn("x", 2).model_dump(mode="json"), "function": "os.system"}).encode(),
        json.dumps({**turn("x", 3).model_dump(mode="json"), "session_id": "s" * 125}).encode(),
    ]
    acme.execute_command(*inbox.call_command(keys, [*args, *hostile]))
    # "first" again while its batch job waits (not ingested): a duplicate; "third" twice in
    # one admission is one duplicate
    inbox.enqueue_many([turn("first", 0), turn("third", 4), turn("third", 4)])
    while admission.admit_all():
        pass
    stats = read_inbox_stats(acme, "acme")
    assert (stats.published, stats.rejected, stats.duplicates, stats.admitted) == (9, 2, 2, 5)
    assert stats.enqueued == 5 and _balanced(stats)
    queued = {str(p["event_id"]) for p in _queued(redis_conn)}
    assert queued == {qualify("acme", turn("x", i).event_id) for i in range(5)}


def test_admission_never_overfills_the_rq_queue(acme: redis.Redis, redis_conn: redis.Redis) -> None:
    TenantInbox(acme, tenant="acme", max_length=100).enqueue_many(
        [turn(f"t{i}", i) for i in range(30)]
    )
    admission = _admission(redis_conn, batch=5)
    while admission.admit_all():
        pass
    assert redis_conn.llen(f"rq:queue:{QUEUE}") == MAX_QUEUED_BATCHES
    stats = read_inbox_stats(acme, "acme")
    assert stats.length == 30 - 5 * MAX_QUEUED_BATCHES and stats.dropped == 0  # waiting


def test_entries_of_an_admitter_that_died_are_admitted_by_the_next(
    acme: redis.Redis, redis_conn: redis.Redis
) -> None:
    TenantInbox(acme, tenant="acme", max_length=10).enqueue_many([turn("a", 0), turn("b", 1)])
    pending = ADMISSION_LIST_TEMPLATE.format(source="acme")
    # what a worker SIGKILLed between taking entries and enqueueing them leaves behind
    redis_conn.lmove(inbox_key("acme"), pending, "LEFT", "RIGHT")
    assert _admission(redis_conn).admit_all() == 1  # the leftover first
    assert _admission(redis_conn).admit_all() == 1
    assert len(_queued(redis_conn)) == 2 and not redis_conn.exists(pending)
    # a lock held by another (live) admitter keeps this one off the tenant
    redis_conn.set(pending + ":lock", "someone", px=5_000)
    TenantInbox(acme, tenant="acme", max_length=10).enqueue_many([turn("c", 2)])
    assert _admission(redis_conn).admit_all() == 0


def test_the_admission_loop_wakes_on_a_publication(
    acme: redis.Redis, redis_conn: redis.Redis, settings: Settings
) -> None:
    assert settings.redis_url
    conn = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    admission = _admission(conn)
    loop = threading.Thread(target=admission.run, daemon=True)
    loop.start()
    try:
        time.sleep(0.3)  # idle: blocked on the wake list
        published = time.monotonic()
        TenantInbox(acme, tenant="acme", max_length=10).enqueue_many([turn("wake up", 0)])
        while not redis_conn.llen(f"rq:queue:{QUEUE}") and time.monotonic() - published < 5:
            time.sleep(0.005)
        waited = time.monotonic() - published
        assert redis_conn.llen(f"rq:queue:{QUEUE}") == 1
        assert waited < 0.5, f"admitted {waited:.2f} s after publication"
    finally:
        admission.stop()
        loop.join(timeout=5)
        conn.close()
    assert not loop.is_alive()
