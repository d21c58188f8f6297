"""A "seen" marker saves work and never decides alone that a turn exists: a forgotten
scope's turns are stored again when published again, a turn queued before the forget is
not, a graph wiped under running workers is reported by ``doctor`` and gets its turns
back at their next publish, and every turn not stored is counted under its reason."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from rq.registry import StartedJobRegistry
from rq.serializers import JSONSerializer

from tests.support.conversation import CONVERSATION, LATE_TURN, ingest, publish
from tests.support.neo4j_tier import READY_TIMEOUT_S
from tests.support.worker_processes import start_worker, stop, wait_for, worker_env
from turngraph.app import (
    build_admission,
    build_graph_store,
    build_ingest_worker,
    build_pipeline,
    ingest_burst,
)
from turngraph.clients import Clients
from turngraph.doctor.checks import Status
from turngraph.doctor.marker_checks import check_markers_agree
from turngraph.producers.bounded_queue import ingested_key, is_ingested, read_stats
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.forget import forget_scope
from turngraph.workers.graph.identity import stored_event_ids
from turngraph.workers.ingest.batching import run_batch
from turngraph.workers.ingest.markers import recorded_identity
from turngraph.workers.tombstones import admitted_epoch
from turngraph.workers.trusted_jobs import TrustedJob

pytestmark = [
    pytest.mark.integration,
    pytest.mark.both_engines,
    # the first Neo4j test waits for the tier's server, whose boot counts toward its
    # timeout: 277 s at load 35, and that test then hit the default 300 s
    pytest.mark.timeout(300 + READY_TIMEOUT_S),
]


def forget(clients: Clients, scope: Scope, key: str) -> None:
    settings = clients.settings
    forget_scope(
        redis_client=clients.redis,
        store=build_graph_store(clients),
        scope=scope,
        key=key,
        queues=[settings.ingest_queue, settings.maintenance_queue],
        changes_stream=settings.changes_stream,
    )


def in_graph(clients: Clients, event_ids: list[str]) -> set[str]:
    return stored_event_ids(clients.graph, clients.graph_database, event_ids)


def wipe(clients: Clients) -> None:
    clients.graph.execute_query("MATCH (n) DETACH DELETE n", database_=clients.graph_database)


def test_a_forgotten_workspace_is_stored_again_when_published_again(clients: Clients) -> None:
    """The README's sequence: the demo, `forget --scope workspace`, the demo again."""
    w1 = [e for e in CONVERSATION if e.workspace == "w1"]
    ids = [e.event_id for e in w1]
    ingest(clients, CONVERSATION)
    forget(clients, Scope.WORKSPACE, "w1")
    assert in_graph(clients, ids) == set()

    ingest(clients, w1)

    assert in_graph(clients, ids) == set(ids)
    stats = read_stats(clients.redis, clients.settings.ingest_queue)
    assert (stats.duplicates, stats.forgotten) == (0, 0), stats
    assert all(clients.redis.get(ingested_key(e)) == b"1" for e in ids)


def test_a_turn_admitted_before_the_forget_is_skipped_and_counted(clients: Clients) -> None:
    """A batch job a worker already held when the scope was forgotten (the forget cannot
    take it back) writes nothing of the scope, and says so in the queue's counters; the
    same turn published after the forget is stored."""
    queue = clients.settings.ingest_queue
    ingest(clients, CONVERSATION[:1])
    publish(clients, [LATE_TURN])
    build_admission(clients, clients.redis).admit_all()
    job_id = clients.redis.lpop(f"rq:queue:{queue}").decode()  # type: ignore[union-attr]
    started = StartedJobRegistry(queue, connection=clients.redis)
    clients.redis.zadd(started.key, {f"{job_id}:exec-1": 2**31})  # a worker runs it
    job = TrustedJob.fetch(job_id, connection=clients.redis, serializer=JSONSerializer)

    forget(clients, Scope.SESSION, "s1")
    counts = run_batch(
        build_pipeline(clients), clients.redis, queue, job.args[0], job.id, admitted_epoch(job)
    )

    assert (counts["turns"], counts["forgotten"]) == (0, 1)
    assert in_graph(clients, [LATE_TURN.event_id]) == set()
    stats = read_stats(clients.redis, queue)
    assert stats.forgotten == 1 and stats.not_stored["forgotten"] == 1

    ingest(clients, [LATE_TURN])  # published again, after the forget
    assert in_graph(clients, [LATE_TURN.event_id]) == {LATE_TURN.event_id}


def test_a_worker_starting_on_another_graph_drops_the_markers_it_lacks(
    clients: Clients,
) -> None:
    ingest(clients, CONVERSATION)
    before = recorded_identity(clients.redis)
    ids = [e.event_id for e in CONVERSATION]
    assert before is not None and all(is_ingested(clients.redis, e) for e in ids)
    wipe(clients)  # a new graph: wiped, or another engine's

    build_pipeline(clients)  # what an ingest worker does at its start

    assert not any(is_ingested(clients.redis, e) for e in ids)
    after = recorded_identity(clients.redis)
    assert after is not None and after.graph_id != before.graph_id
    assert check_markers_agree(clients.settings).status is Status.OK


def doctor_markers(env: dict[str, str]) -> dict[str, str]:
    done = subprocess.run(
        [sys.executable, "-m", "turngraph.cli", "doctor", "--json"],
        env=env,
        capture_output=True,
        timeout=180,
        check=False,
    )
    assert "Traceback" not in done.stderr.decode(), done.stderr.decode()
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    return checks["graph.markers"]


def test_a_graph_wiped_under_running_workers_is_reported_then_refilled(
    clients: Clients,
) -> None:
    env = worker_env(clients)
    ids = [e.event_id for e in CONVERSATION]
    worker = start_worker("ingest", env)
    try:
        publish(clients, CONVERSATION)
        assert wait_for(lambda: in_graph(clients, ids) == set(ids), 120), "never ingested"
        assert doctor_markers(env)["status"] == "ok"
        wipe(clients)

        reported = doctor_markers(env)
        assert reported["status"] == "fail", reported
        assert f"{len(ids)} of {len(ids)} turns" in reported["detail"], reported
        assert "restart the ingest workers" in reported["fix"], reported

        publish(clients, CONVERSATION)  # the editors publish the old turns again
        assert wait_for(lambda: in_graph(clients, ids) == set(ids), 120), "not stored again"
        assert doctor_markers(env)["status"] != "fail"
    finally:
        code, output = stop(worker)
    assert code == 0, output[-3000:]
    stats = read_stats(clients.redis, clients.settings.ingest_queue)
    assert stats.duplicates == 0 and stats.admitted == 2 * len(ids), stats
    # written once into this graph: the marker counts 1, not 2 (the chaos check's "twice")
    assert all(clients.redis.get(ingested_key(e)) == b"1" for e in ids)


def test_admission_trusts_no_marker_the_graph_contradicts(clients: Clients) -> None:
    """One worker, started before the wipe (its start checked nothing since): admission
    finds the markers set, the graph without the turns, and admits them again."""
    worker = build_ingest_worker(clients)
    publish(clients, CONVERSATION[:2])
    ingest_burst(clients, worker)
    wipe(clients)
    publish(clients, CONVERSATION[:2])
    ingest_burst(clients, worker)
    ids = [e.event_id for e in CONVERSATION[:2]]
    assert in_graph(clients, ids) == set(ids)
    assert read_stats(clients.redis, clients.settings.ingest_queue).duplicates == 0
