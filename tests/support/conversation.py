"""A conversation across scopes, ingested through the real pipeline, and a normalised view
of the graph to compare states (for forget and export/import tests).

Workspace ``w1`` (user ``u1``): session ``s1`` decides something about ``src/upload.py``,
session ``s2`` supersedes that decision and states a user-level preference. Workspace
``w2`` (user ``u2``): session ``s3`` mentions the same file and tool names.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from tests.support.turns import turn
from turngraph.app import ingest_burst
from turngraph.clients import Clients
from turngraph.schemas.turn_event import TurnEvent

CONVERSATION: list[TurnEvent] = [
    turn("decision: retry uploads with exponential backoff in src/upload.py", 0, session="s1"),
    turn("Done. src/upload.py uses tenacity now, on branch feat/upload.", 1, session="s1",
         role="assistant"),
    turn("We also call redis from src/upload.py; see PR #12", 2, session="s1"),
    turn("decision: retry uploads with a fixed delay in src/upload.py", 0, session="s2",
         minutes=60),
    turn("preference (user): answer in short bullet points", 1, session="s2", minutes=61),
    turn("src/upload.py in this repo calls redis too, PR #12", 0, session="s3",
         workspace="w2", user="u2", minutes=90),
]  # fmt: skip

LATE_TURN = turn("one more thing about src/upload.py", 3, session="s1", minutes=5)
"""Published but not yet ingested when a test acts: its job waits in the queue."""

VOLATILE = frozenset({"ingested_at", "first_seen", "last_seen", "valid_at", "created_at",
                      "started_at", "summary", "statement", "aliases", "name",
                      "graph_id"})  # fmt: skip
"""Set once by whichever turn came first (or, ``graph_id``, by the first worker on the
graph); compared separately where it matters."""


def ingest(clients: Clients, events: Iterable[TurnEvent], *, distill: bool = False) -> None:
    """Through the inbox, admission and a burst RQ worker, as in production; with ``distill``
    the maintenance jobs it triggered run too, and every topic is compacted."""
    from turngraph.producers.bounded_queue import BoundedQueue

    queue = BoundedQueue(clients.redis, name=clients.settings.ingest_queue, max_length=1_000)
    for event in events:
        queue.enqueue(event)
    ingest_burst(clients)
    if distill:
        _distill(clients)


def _distill(clients: Clients) -> None:
    from turngraph.app import build_maintenance_worker
    from turngraph.workers.maintenance.compaction import compact_topic
    from turngraph.workers.maintenance.summaries import workspace_topics

    worker = build_maintenance_worker(clients)
    worker.work(burst=True, with_scheduler=False)
    for workspace in sorted({event.workspace for event in CONVERSATION}):
        for topic_id in workspace_topics(worker.distiller, workspace):
            compact_topic(worker.distiller, workspace, topic_id)


def publish(clients: Clients, events: Iterable[TurnEvent]) -> None:
    """Publish into the inbox without ingesting."""
    from turngraph.producers.bounded_queue import BoundedQueue

    queue = BoundedQueue(clients.redis, name=clients.settings.ingest_queue, max_length=1_000)
    for event in events:
        queue.enqueue(event)


def _identity(labels: list[str], props: dict[str, Any]) -> str:
    for key in ("uid", "event_id", "key"):
        if key in props:
            return f"{':'.join(sorted(labels))}/{props[key]}"
    return f"{':'.join(sorted(labels))}/?"


def _stable(props: dict[str, Any]) -> tuple[tuple[str, Any], ...]:
    return tuple(
        sorted(
            (k, tuple(v) if isinstance(v, list) else v)
            for k, v in props.items()
            if k not in VOLATILE
        )
    )


def snapshot(clients: Clients) -> tuple[set[Any], set[Any]]:
    """Nodes and relationships by identity and stable properties, engine ids left out."""
    db = clients.graph_database
    nodes, _, _ = clients.graph.execute_query(
        "MATCH (n) RETURN labels(n) AS labels, properties(n) AS props", database_=db
    )
    rels, _, _ = clients.graph.execute_query(
        "MATCH (a)-[r]->(b) RETURN labels(a) AS al, properties(a) AS ap, type(r) AS type, "
        "properties(r) AS props, labels(b) AS bl, properties(b) AS bp",
        database_=db,
    )
    node_set = {(_identity(r["labels"], r["props"]), _stable(r["props"])) for r in nodes}
    rel_set = {
        (
            _identity(r["al"], r["ap"]),
            r["type"],
            _identity(r["bl"], r["bp"]),
            _stable(r["props"]),
        )
        for r in rels
    }
    return node_set, rel_set
