"""20x overload from several producer processes: the bound holds, the counts are exact,
and after the ingest workers drain, every accepted event is in the graph."""

from __future__ import annotations

import json

import pytest

from bench.overload import SHARED_EVENTS, overload_event, run_overload
from tests.support.conversation import ingest
from turngraph.app import ingest_burst
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import ingested_key, read_stats
from turngraph.schemas.defaults import DropPolicy
from turngraph.schemas.keys import QUEUE_STATS_TEMPLATE

pytestmark = pytest.mark.integration

BOUND = 100


@pytest.mark.parametrize("policy", list(DropPolicy))
def test_overload_keeps_the_bound_and_counts_exactly(clients: Clients, policy: DropPolicy) -> None:
    queue_name = clients.settings.ingest_queue
    assert clients.settings.redis_url
    shared = [overload_event("s_shared", i) for i in range(SHARED_EVENTS // 4)]
    # every producer publishes these: duplicates. Really ingested: a marker alone is no
    # longer trusted, admission checks the graph holds the turn (idempotency follows it)
    ingest(clients, shared)
    already_ingested = [event.event_id for event in shared]
    assert all(clients.redis.exists(ingested_key(event_id)) for event_id in already_ingested)
    clients.redis.delete(QUEUE_STATS_TEMPLATE.format(queue=queue_name))  # count the run only
    run = run_overload(
        clients.settings.redis_url,
        policy=policy,
        bound=BOUND,
        producers=3,
        factor=20,
        queue_name=queue_name,
    )
    stats = run.shared
    assert run.samples >= 10 and run.max_length <= BOUND
    assert run.calls >= 20 * BOUND
    assert stats.accepted + stats.dropped + stats.duplicates == stats.published
    assert run.exact
    assert stats.dropped > 0
    assert stats.length == stats.accepted == BOUND
    if policy is DropPolicy.DROP_NEWEST:
        assert stats.dropped_oldest == 0
    else:
        assert stats.dropped_newest == 0

    inbox = clients.redis.lrange(f"turngraph:inbox:{queue_name}", 0, -1)
    waiting = {json.loads(raw)["event_id"] for raw in inbox}
    ingest_burst(clients)  # admission finds the already ingested ones: duplicates
    after = read_stats(clients.redis, queue_name)
    shared_waiting = waiting & set(already_ingested)
    assert after.duplicates >= len(shared_waiting) and after.length == 0
    assert after.accepted + after.dropped + after.duplicates == after.published
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.event_id AS id", database_=clients.graph_database
    )
    assert waiting - set(already_ingested) <= {record["id"] for record in records}
