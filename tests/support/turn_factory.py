"""TurnEvents for producer tests and benchmarks (scope keys already hashed-looking)."""

from __future__ import annotations

from tests.support.turns import turn
from turngraph.schemas.turn_event import TurnEvent

SAMPLE_CONTENT = (
    "Let's keep the retry in the ingest job and make the graph writes idempotent on "
    "event_id. decision: use MERGE on Episode.event_id; see producers/bounded_queue.py "
    "and PR #42 on branch feature/bounded-queue."
)


def make_turn(
    index: int,
    *,
    session: str = "s_test",
    content: str = SAMPLE_CONTENT,
    workspace: str = "w_test",
    user: str = "u_test",
) -> TurnEvent:
    """A valid user turn at a fixed time; the event id is the stable default for
    (session, index, role)."""
    return turn(content, index, session=session, workspace=workspace, user=user, minutes=0)
