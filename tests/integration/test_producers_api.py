"""``turngraph.producers``, the public API, used the way docs/producers.md shows it, on the
real Redis the fixtures start: every exported name resolves, consent gates publication,
the turn reaches the queue, and recall and distill fail open with no worker running."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

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
from turngraph.producers.connection import RECALL_SOCKET_SLACK_S, Connection
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


class SilentServer:
    """A server that accepts connections and never answers: a Redis paused (SIGSTOP),
    swapping, or behind a link that drops packets."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self.listener.getsockname()[1])
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                self.accepted.append(self.listener.accept()[0])

    def close(self) -> None:
        self.listener.close()
        for held in self.accepted:  # the client's read ends (EOF) instead of hanging on
            held.close()


HELD_FOR_S = 5.0
"""How long a call on a silent Redis is given before the test calls it held (the fault
both tests guard held it for 121 s)."""


def _on_a_silent_redis(
    settings: Settings, call: Callable[[Connection], Any], deadline_ms: int | None = None
) -> tuple[list[Any], float]:
    """Run ``call`` with a client connected to a Redis that never answers, in a thread
    given :data:`HELD_FOR_S`: what it returned (nothing if still held) and how long it
    took."""
    silent = SilentServer()
    url = f"redis://127.0.0.1:{silent.port}"
    memory = connect(settings.model_copy(update={"redis_url": url}), deadline_ms=deadline_ms)
    answered: list[Any] = []
    try:
        calling = threading.Thread(target=lambda: answered.append(call(memory)), daemon=True)
        started = time.monotonic()
        calling.start()
        calling.join(timeout=HELD_FOR_S)
        waited = time.monotonic() - started
    finally:
        silent.close()
        memory.close()
    return answered, waited


def test_the_rolling_context_is_not_waited_for_on_a_silent_redis(settings: Settings) -> None:
    # The context op (read straight from Redis before each recall, docs/editors.md) used
    # the distill connection, whose socket timeout is the longest distill deadline:
    # a paused Redis held the bridge, and every line behind it, for 121 s.
    answered, waited = _on_a_silent_redis(settings, lambda m: m.distiller.rolling_context("s-1"))
    assert answered == [None] and waited < HELD_FOR_S


def test_a_distill_ask_on_a_silent_redis_fails_open_near_its_deadline(settings: Settings) -> None:
    # The request was pushed on the distill connection (socket timeout: the longest
    # distill deadline): an ask with a 500 ms deadline waited 121 s on a paused Redis.
    answered, waited = _on_a_silent_redis(
        settings, lambda m: m.distiller.full_summary("m-1", deadline_ms=500)
    )
    assert waited < HELD_FOR_S
    [reply] = answered
    assert not reply.success and reply.error_code.value == "BACKEND_UNAVAILABLE"


def test_a_recall_on_a_silent_redis_fails_open_at_its_deadline(settings: Settings) -> None:
    # The request was pushed on the recall connection, whose socket timeout is the
    # deadline plus RECALL_SOCKET_SLACK_S (it waits for the answer): a paused Redis held
    # a 300 ms recall for 0.8 s (1.28 s through MCP's 750 ms default). The push now has
    # a connection timed by the deadline itself; the old code never returned before the
    # longer timeout.
    answered, waited = _on_a_silent_redis(
        settings, lambda m: m.recaller.recall("which bundler?", workspace="w"), deadline_ms=300
    )
    [reply] = answered
    assert not reply.success and reply.error_code.value == "BACKEND_UNAVAILABLE"
    assert waited < 0.3 + RECALL_SOCKET_SLACK_S, waited
