"""Small builders for TurnEvents in tests."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from turngraph.schemas.turn_event import ClientInfo, TurnEvent

T0 = datetime(2026, 11, 1, 9, 0, tzinfo=UTC)


def turn(
    content: str,
    index: int = 0,
    *,
    session: str = "s1",
    workspace: str = "w1",
    user: str = "u1",
    role: str = "user",
    minutes: int | None = None,
) -> TurnEvent:
    return TurnEvent(
        session_id=session,
        workspace=workspace,
        user=user,
        turn_index=index,
        role=role,  # type: ignore[arg-type]
        content=content,
        occurred_at=T0 + timedelta(minutes=index if minutes is None else minutes),
        client=ClientInfo(name="tests", version="1"),
    )
