"""TurnEvents for producer tests and benchmarks (scope keys already hashed-looking)."""

from __future__ import annotations

from datetime import UTC, datetime

from schemas.turn_event import ClientInfo, TurnEvent

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
    """A valid user turn; the event id is the stable default for (session, index, role)."""
    return TurnEvent(
        session_id=session,
        workspace=workspace,
        user=user,
        turn_index=index,
        role="user",  # type: ignore[arg-type]
        content=content,
        occurred_at=datetime(2026, 11, 21, 5, 0, tzinfo=UTC),
        client=ClientInfo(name="pytest", version="1"),
    )
