"""A conversation that changes one decision twice, and a Distiller on the test clients."""

from __future__ import annotations

from tests.support.turns import turn
from turngraph.clients import Clients
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.graph.distill_store import BoltDistillStore
from turngraph.workers.maintenance.context import Distiller, DistillOptions

DECISION_CONVERSATION: list[tuple[str, str]] = [
    ("user", "We need a job queue for the ingest workers, see plan 012-queue-choice."),
    ("assistant", "Options are RQ, Celery and dramatiq. RQ is the smallest; Celery is heavy."),
    (
        "user",
        "We decided to use RQ for the job queue because it is simple and we already run Redis.",
    ),
    ("assistant", "Next I will add the worker in workers/ingest/job.py. Do we need priorities?"),
    ("user", "RQ has no bounded queue though, the producers could flood Redis."),
    (
        "user",
        "Let's go with dramatiq for the job queue, because its middleware gives us retries.",
    ),
    ("assistant", "Ok, I will port workers/ingest/job.py to dramatiq actors."),
    ("user", "Hmm, dramatiq binds actors to a global broker at import time, that bit us."),
    (
        "user",
        "We decided to use RQ for the job queue after all, since a Lua script can bound it.",
    ),
    ("assistant", "I'll write the Lua enqueue script in producers/enqueue.lua next."),
]
"""Decisions at turns 2, 5 and 8, all on the subject "job queue"."""

DECISION_TURNS = (2, 5, 8)


def decision_events(
    session: str = "s_dec", workspace: str = "w_dec", user: str = "u_dec"
) -> list[TurnEvent]:
    return [
        turn(text, index, role=role, session=session, workspace=workspace, user=user)
        for index, (role, text) in enumerate(DECISION_CONVERSATION)
    ]


def distiller_for(clients: Clients, **options: object) -> Distiller:
    return Distiller(
        store=BoltDistillStore(clients.graph, clients.graph_database),
        redis=clients.redis,
        changes_stream=clients.settings.changes_stream,
        options=DistillOptions(**options),  # type: ignore[arg-type]
    )
