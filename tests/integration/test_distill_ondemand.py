"""On demand, through Redis and the maintenance worker: "summarize and store the last N
turns", a session recap, the full stored summary, promotion (client API);
the rolling context kept incrementally; ``turngraph recap`` from the command line."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
import redis
import structlog

from tests.support.distill import decision_events
from tests.support.turns import turn
from tests.support.worker_processes import wait_for, worker_env
from turngraph.app import build_maintenance_worker, build_pipeline, maintenance_queue
from turngraph.cli import main
from turngraph.clients import Clients
from turngraph.producers.distill_client import DistillClient
from turngraph.schemas.distill import DistillResponse
from turngraph.schemas.keys import DISTILL_REQUESTS
from turngraph.workers.extraction.offline import OfflineExtractor
from turngraph.workers.maintenance.asks import AskAdmission

pytestmark = pytest.mark.both_engines

T = TypeVar("T")


def _served(clients: Clients, ask: Callable[[], T]) -> T:
    """Run ``ask`` (a blocking client call) while admission and a burst worker serve it."""
    result: list[T] = []
    thread = threading.Thread(target=lambda: result.append(ask()))
    thread.start()
    asks = AskAdmission(clients.redis, maintenance_queue(clients))
    for _ in range(10):  # each wait blocks at most a second for the ask to come
        if asks.admit_all():
            break
        asks.wait_idle()
    assert asks.served.answered == 1, "the ask was not admitted"
    build_maintenance_worker(clients).work(burst=True, with_scheduler=False)
    thread.join(timeout=30)
    assert result, "no reply"
    return result[0]


ASK_WAITS_MS = 240_000
"""How long the burst test's ask waits: a worker process's start-up and burst, which took
over 60 s at load 16-20 (a clean-clone run on a busy machine); the test is about the ask
being answered, not how fast."""


def _client(clients: Clients, deadline_ms: int = 20_000) -> DistillClient:
    """A client on its own connection, whose socket waits longer than the deadline (as
    ``producers.connection`` builds it): a shared 5 s socket would end a slow answer's
    BLPOP as "unavailable"."""
    assert clients.settings.redis_url
    conn = redis.Redis.from_url(clients.settings.redis_url, socket_timeout=deadline_ms / 1000 + 5)
    return DistillClient(conn, deadline_ms=deadline_ms)


def _ingest(clients: Clients) -> list[str]:
    events = decision_events(session="s_od", workspace="w_od", user="u_od")
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(events)
    return [e.event_id for e in events]


def test_summarize_last_turns_then_show_the_full_summary(clients: Clients) -> None:
    event_ids = _ingest(clients)
    client = _client(clients)
    reply = _served(clients, lambda: client.summarize("s_od", last_n=4))
    assert reply.success, reply.user_message
    assert reply.summary is not None and reply.summary.status.value == "Final"
    assert list(reply.summary.source_event_ids) == event_ids[-4:]
    assert reply.text.startswith("Topic:") and "Decisions:" in reply.text
    full = _served(clients, lambda: client.full_summary(reply.summary.id))  # type: ignore[union-attr]
    assert full.success and full.text == reply.text


def test_a_burst_maintenance_worker_answers_the_asks_waiting(clients: Clients) -> None:
    """``turngraph worker maintenance --burst`` admits the asks inbox before it works the
    queue off, as ``worker ingest --burst`` does with the turns' inboxes."""
    _ingest(clients)
    result: list[DistillResponse] = []
    asking = threading.Thread(
        target=lambda: result.append(_client(clients, ASK_WAITS_MS).summarize("s_od", last_n=4))
    )
    asking.start()
    try:
        assert wait_for(lambda: clients.redis.llen(DISTILL_REQUESTS) == 1, 10)
        done = subprocess.run(
            [sys.executable, "-m", "turngraph", "worker", "maintenance", "--burst"],
            env=worker_env(clients, TURNGRAPH_EMBEDDING_PROVIDER="none"),
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
    finally:
        asking.join(timeout=ASK_WAITS_MS / 1000 + 10)
    assert result and result[0].success, result


def test_recap_and_promote_on_request(clients: Clients) -> None:
    events = [
        turn(text, i, session="s_rp", workspace="w_rp", user="u_rp")
        for i, text in enumerate(["We need a cache for the API responses.",
                                  "Let's go with Redis for the cache.",
                                  "Next: add the cache decorator in api/cache.py."])
    ]  # fmt: skip
    build_pipeline(clients, extractor=OfflineExtractor()).ingest(events)
    client = _client(clients)
    recap = _served(clients, lambda: client.recap("s_rp", budget_tokens=300))
    assert recap.success and recap.recap is not None, recap.user_message
    assert recap.text.splitlines()[-1].startswith("Where we stopped")
    assert recap.recap.tokens <= 300
    promoted = _served(
        clients,
        lambda: client.promote(
            "preference", "short answers", user="u_rp", scope="user", session_id="s_rp"
        ),
    )
    assert promoted.success and promoted.memory is not None, promoted.user_message
    assert promoted.memory.scope == "user"
    assert promoted.memory.source_event_ids == (events[-1].event_id,)
    refused = _served(
        clients,
        lambda: client.promote(
            "preference", "token sk-proj-abcdefghijklmnopqrstuvwxyz0123", user="u_rp",
            workspace="w_rp", session_id="s_rp",
        ),
    )  # fmt: skip
    assert not refused.success and refused.error_code is not None
    assert refused.error_code.value == "REFUSED" and "sk-proj" not in str(refused.user_message)
    invalid = client.promote("opinion", "x", user="u_rp")
    assert not invalid.success and invalid.error_code is not None
    assert invalid.error_code.value == "INVALID_REQUEST"


def test_client_fails_open_without_a_maintenance_worker(clients: Clients) -> None:
    reply = DistillClient(
        clients.redis, requests_key="turngraph:test:nobody", deadline_ms=50
    ).recap("s")
    assert not reply.success and reply.error_code is not None
    assert reply.error_code.value == "DEADLINE_EXCEEDED"


def test_rolling_context_is_kept_incrementally(clients: Clients) -> None:
    pipeline = build_pipeline(clients, extractor=OfflineExtractor())
    events = decision_events(session="s_roll", workspace="w_roll")
    client = DistillClient(clients.redis)
    seen: list[int] = []
    for start in range(0, len(events), 3):
        pipeline.ingest(events[start : start + 3])
        build_maintenance_worker(clients).work(burst=True, with_scheduler=False)
        rolling = client.rolling_context("s_roll")
        assert rolling is not None
        seen.append(rolling.summarized_through)
        last = events[min(start + 2, len(events) - 1)].turn_index
        assert [t.turn_index for t in rolling.recent] == list(range(max(0, last - 3), last + 1))
        assert len(rolling.summary.split()) <= 200 and rolling.tokens <= 1_100
    assert seen == sorted(seen) and seen[-1] == len(events) - 5
    assert "Decided: " in rolling.summary and "dramatiq" in rolling.summary.casefold()
    context_turns = rolling.conversation_context()
    assert context_turns[0]["role"] == "system" and len(context_turns) == 5


@pytest.fixture
def env(clients: Clients, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Clients]:
    """The CLI configures logging onto this test's captured stderr; put it back after.
    Loggers are not cached meanwhile: a module's logger cached on this test's stderr would
    write to a closed file in later tests."""
    structlog_config = structlog.get_config()
    configure = structlog.configure
    monkeypatch.setattr(
        structlog,
        "configure",
        lambda **options: configure(**{**options, "cache_logger_on_first_use": False}),
    )
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield from _env(clients, monkeypatch, tmp_path)
    structlog.configure(**structlog_config)
    root.handlers[:] = handlers
    root.setLevel(level)


def _env(clients: Clients, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Clients]:
    settings = clients.settings
    monkeypatch.chdir(tmp_path)
    for name, value in {
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri,
        "TURNGRAPH_GRAPH_USER": settings.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
        "TURNGRAPH_GRAPH_DATABASE": settings.graph_database,
    }.items():
        monkeypatch.setenv(name, str(value))
    yield clients


def test_recap_and_summarize_commands(env: Clients, capsys: pytest.CaptureFixture[str]) -> None:
    # The commands take a session as `turngraph scopes` lists it (a stored id is kept as it
    # is; a raw key would be hashed with this installation's salt first).
    session = "s_" + "0d" * 16
    events = decision_events(session=session, workspace="w_od", user="u_od")
    build_pipeline(env, extractor=OfflineExtractor()).ingest(events)
    capsys.readouterr()  # the ingest's own log lines
    assert main(["recap", session, "--budget", "300"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    assert out[0].startswith("Recap of the previous session (10 turns")
    assert out[-1].startswith("Where we stopped")
    assert main(["summarize", session, "--last", "3"]) == 0
    assert capsys.readouterr().out.startswith("Topic:")
    assert main(["recap", "nobody"]) == 1
