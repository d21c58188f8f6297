"""The recall worker loop: replicas, freshness from the change stream, scope isolation."""

from __future__ import annotations

import gc
import threading
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.recall_client import RecallClient
from turngraph.workers.recall.worker import RecallWorker

pytestmark = pytest.mark.both_engines


def _serve(workers: list[RecallWorker]) -> list[threading.Thread]:
    threads = [threading.Thread(target=w.run, daemon=True) for w in workers]
    for thread in threads:
        thread.start()
    return threads


def _stop(workers: list[RecallWorker], threads: list[threading.Thread]) -> None:
    for worker in workers:
        worker.stop()
    for thread in threads:
        thread.join(timeout=10)


def test_two_replicas_answer_concurrent_clients(clients: Clients) -> None:
    build_pipeline(clients).ingest(
        [turn(f"Note {i}: the parser handles unicode escapes in module {i}.", i) for i in range(20)]
    )
    replicas = [build_recall_worker(clients) for _ in range(2)]
    for replica in replicas:
        assert replica.bootstrap() == 20
    threads = _serve(replicas)
    try:
        client = RecallClient(clients.redis, deadline_ms=5_000)
        with ThreadPoolExecutor(max_workers=8) as pool:
            responses = list(
                pool.map(
                    lambda i: client.recall(
                        f"unicode escapes module {i}", session_id="s1", workspace="w1", user="u1"
                    ),
                    range(40),
                )
            )
    finally:
        _stop(replicas, threads)
    assert all(r.success and r.results for r in responses)
    answered = [replica.counters.answered for replica in replicas]
    assert sum(answered) == 40 and min(answered) > 0


def test_a_bootstrapped_index_is_frozen_out_of_the_collectors_full_passes(
    clients: Clients,
) -> None:
    """docs/history.md: otherwise each full collection walks every indexed object."""
    build_pipeline(clients).ingest(
        [turn(f"Note {i}: the cache warms in {i} s.", i) for i in range(5)]
    )
    recall = build_recall_worker(clients)
    frozen_before = gc.get_freeze_count()
    try:
        assert recall.bootstrap() == 5
        memory = next(iter(recall.index.snapshot().values()))
        assert gc.get_freeze_count() > frozen_before
        assert gc.is_tracked(memory) and not any(o is memory for o in gc.get_objects())
    finally:
        gc.unfreeze()


def test_index_stays_fresh_from_the_change_stream(clients: Clients) -> None:
    pipeline = build_pipeline(clients)
    recall = build_recall_worker(clients)
    recall.bootstrap()
    client = RecallClient(clients.redis, deadline_ms=5_000)
    event = turn("The nightly export now compresses with zstd level 3.", 0)
    pipeline.ingest([event])
    assert recall.apply_pending_changes(block_ms=1_000) >= 1
    threads = _serve([recall])
    try:
        response = client.recall(
            "which compression does the export use?", session_id="s1", workspace="w1", user="u1"
        )
    finally:
        _stop([recall], threads)
    assert response.results and response.results[0].source_event_ids == [event.event_id]


def test_a_workspace_never_sees_another_workspaces_memories(clients: Clients) -> None:
    build_pipeline(clients).ingest(
        [
            turn(
                "Workspace A keeps its secrets manager in vault.", 0, session="sa", workspace="wa"
            ),
            turn("Workspace B keeps its secrets manager in sops.", 0, session="sb", workspace="wb"),
        ]
    )
    recall = build_recall_worker(clients)
    recall.bootstrap()
    threads = _serve([recall])
    try:
        client = RecallClient(clients.redis, deadline_ms=5_000)
        as_b = client.recall(
            "where is the secrets manager?",
            session_id="sb",
            workspace="wb",
            user="u1",
            scopes=["workspace"],
        )
    finally:
        _stop([recall], threads)
    assert as_b.results
    assert all("sops" in r.text for r in as_b.results)
