"""``turngraph.producers``, the public API, used the way docs/producers.md shows it, on the
real Redis the fixtures start: every exported name resolves, consent gates publication,
the turn reaches the queue, and recall and distill fail open with no worker running."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import redis

import turngraph.producers as api
from turngraph.producers import (
    ClientInfo,
    ConsentStore,
    ScopeHasher,
    TurnEvent,
    connect,
    consent_endpoint,
)
from turngraph.producers.bounded_queue import read_stats
from turngraph.settings import Settings


def test_every_exported_name_resolves_and_nothing_else_does() -> None:
    for name in api.__all__:
        assert getattr(api, name) is not None, name  # an import error or typo raises
    with pytest.raises(AttributeError, match="publisher_from_settings"):
        _ = api.publisher_from_settings


@pytest.mark.usefixtures("redis_conn")
def test_the_documented_example_publishes_and_fails_open(settings: Settings) -> None:
    assert settings.redis_url
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    consent = ConsentStore(settings.data_dir)
    endpoint = consent_endpoint(settings.redis_url, settings.data_dir)
    workspace = hasher.workspace("/home/me/project")
    consent.enable(workspace, endpoint)  # what `turngraph consent enable` records
    memory = connect(settings, consent=consent.checker(endpoint), deadline_ms=100)

    def turn(workspace: str, index: int) -> TurnEvent:
        return TurnEvent(
            session_id=hasher.session("chat-1"),
            workspace=workspace,
            user=hasher.user("me"),
            turn_index=index,
            role="user",
            content="we chose RQ for the job queue",
            occurred_at=datetime.now(UTC),
            client=ClientInfo(name="my-editor"),
        )

    try:
        assert memory.publisher.publish(turn(workspace, 3)) is True
        assert memory.publisher.publish(turn(hasher.workspace("/elsewhere"), 4)) is False
        assert memory.publisher.flush(timeout_s=10.0)
        recalled = memory.recaller.recall("what did we decide?", workspace=workspace)
        assert recalled.degraded, "no recall worker runs: the answer is empty and flagged"
        assert memory.distiller is not None and memory.queue_status is not None
        recap = memory.distiller.recap(None, workspace=workspace, deadline_ms=100)
        assert not recap.success and recap.error_code is not None
        assert recap.error_code.value == "DEADLINE_EXCEEDED"
        assert memory.queue_status()["published"] == 1
    finally:
        memory.close()
    counted = memory.publisher.stats()
    assert (counted.published, counted.not_consented) == (2, 1)
    conn = redis.Redis.from_url(settings.redis_url)
    try:
        assert read_stats(conn, settings.ingest_queue).enqueued == 1
    finally:
        conn.close()
