"""bench.ingest's reference, the empty worker: admission and RQ batch jobs run over the
published turns exactly as in an ingest worker, and nothing is written."""

from __future__ import annotations

import redis

from bench.ingest import make_turns
from bench.ingest_empty_worker import EmptyPipeline, turns_done
from turngraph.app import build_ingest_worker, ingest_burst
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue, is_ingested


def test_every_turn_reaches_a_batch_job_and_nothing_is_written(
    clients: Clients, redis_conn: redis.Redis
) -> None:
    turns = make_turns(250)
    BoundedQueue(redis_conn, max_length=1000).enqueue_many(turns)

    ingest_burst(clients, build_ingest_worker(clients, EmptyPipeline()))

    assert turns_done(redis_conn) == 250  # three batch jobs of up to 100 turns, all finished
    assert not any(is_ingested(redis_conn, turn.event_id) for turn in turns)
    records, _, _ = clients.graph.execute_query(
        "MATCH (n) RETURN count(n) AS nodes", database_=clients.graph_database
    )
    assert records[0]["nodes"] == 0
