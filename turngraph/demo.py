"""A short demo conversation, published through the real producer path and recalled."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypeVar

import redis

from turngraph.lifecycle import raise_if_stopping, stops_held
from turngraph.producers.bounded_queue import is_ingested
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.recall import RecallResponse
from turngraph.schemas.turn_event import ClientInfo, TurnEvent

__all__ = [
    "DEMO_QUESTION", "DEMO_SESSION", "DEMO_TURNS", "DEMO_USER", "DEMO_WORKSPACE", "DemoScopes",
    "ask", "ask_until_found", "demo_events", "render", "wait_for", "wait_until_ingested",
]  # fmt: skip

DEMO_SESSION = "demo-session-1"
DEMO_WORKSPACE = "demo-workspace"
DEMO_USER = "demo-user"

DEMO_TURNS = (
    (
        "user",
        "The ingest worker crashes on job ids with dots. See src/queue/jobs.py on "
        "branch fix/job-ids, issue #42.",
    ),
    (
        "assistant",
        "RQ validates job ids; ids must match [A-Za-z0-9_-]+. I changed "
        "`make_job_id` in src/queue/jobs.py to hash the event id.",
    ),
    ("user", "decision: we use Valkey with maxmemory-policy noeviction for the ingest queue."),
    (
        "assistant",
        "Noted. With noeviction, Redis refuses writes when full instead of silently "
        "evicting job hashes, so the bounded queue's drop counters stay exact.",
    ),
    ("user", "preference: (user) answer with short code examples, tabs not spaces."),
)

DEMO_QUESTION = "which eviction policy did we choose for the queue?"


@dataclass(frozen=True)
class DemoScopes:
    """The demo's scope keys, hashed with the installation salt as a producer does."""

    session: str
    workspace: str
    user: str

    @classmethod
    def hashed(cls, hasher: ScopeHasher) -> DemoScopes:
        return cls(
            hasher.session(DEMO_SESSION), hasher.workspace(DEMO_WORKSPACE), hasher.user(DEMO_USER)
        )


def demo_events(scopes: DemoScopes, now: datetime | None = None) -> list[TurnEvent]:
    start = (now or datetime.now(UTC)) - timedelta(minutes=len(DEMO_TURNS))
    return [
        TurnEvent(
            session_id=scopes.session,
            workspace=scopes.workspace,
            user=scopes.user,
            turn_index=index,
            role=role,
            content=content,
            occurred_at=start + timedelta(minutes=index),
            client=ClientInfo(name="turngraph-demo", version="1"),
        )
        for index, (role, content) in enumerate(DEMO_TURNS)
    ]


T = TypeVar("T")


def _held(call: Callable[[], T]) -> T:
    """``call()`` (Redis, the graph's driver) with a stop signal held until it returns."""
    with stops_held():
        return call()


def wait_until_ingested(
    conn: redis.Redis,
    events: list[TurnEvent],
    timeout_s: float,
    stored: Callable[[Sequence[str]], set[str]],
) -> bool:
    """Ingest is asynchronous: poll the ingested markers the workers set, then ask the
    graph (``stored``: which of these event ids it holds). A marker alone proves nothing:
    after a change of graph (another engine, a wipe) the markers of the last graph stay
    until an ingest worker has checked them, and the demo would ask before its turns
    are stored."""
    deadline = time.monotonic() + timeout_s
    ids = [event.event_id for event in events]
    while not _held(lambda: all(is_ingested(conn, i) for i in ids) and stored(ids) == set(ids)):
        if time.monotonic() > deadline:
            return False
        raise_if_stopping()
        time.sleep(0.05)  # the demo polls the way an impatient user would
    return True


def wait_for(
    ready: Callable[[], bool], timeout_s: float, still_starting: Callable[[], bool]
) -> bool:
    """Poll until ``ready()`` (a worker's readiness), the deadline passes, or
    ``still_starting`` says the process that would become ready is gone."""
    deadline = time.monotonic() + timeout_s
    while not _held(ready):
        if time.monotonic() > deadline or not still_starting():
            return False
        raise_if_stopping()
        time.sleep(0.05)
    return True


def ask(client: RecallClient, scopes: DemoScopes) -> RecallResponse:
    return client.recall(
        DEMO_QUESTION, session_id=scopes.session, workspace=scopes.workspace, user=scopes.user
    )


def ask_until_found(client: RecallClient, scopes: DemoScopes, timeout_s: float) -> RecallResponse:
    """The ingest marker and the change the recall worker applies are written together but
    read apart: ask again (each ask waits for its own reply) until memories come back."""
    deadline = time.monotonic() + timeout_s
    while True:
        response = _held(lambda: ask(client, scopes))
        if (response.success and response.results) or time.monotonic() > deadline:
            return response
        raise_if_stopping()
        time.sleep(0.1)


def render(response: RecallResponse) -> str:
    lines = [f"Q: {DEMO_QUESTION}"]
    if not response.success:
        lines.append(f"recall failed: {response.error_code} {response.user_message}")
    for rank, result in enumerate(response.results, 1):
        lines.append(
            f"  {rank}. [{result.kind}, {result.scope}, score {result.score.final_score:.3f}] "
            f"{result.text}"
        )
    lines.append(f"({response.result_count} results in {response.took_ms:.1f} ms)")
    if response.memory_block:
        lines += ["", "What a chat assistant would put in its prompt:", response.memory_block]
    return "\n".join(lines)
