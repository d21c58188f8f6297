"""Rolling context for long sessions (``seeds/conversation-memory-plan.md`` §7).

The last four turns verbatim plus a rolling summary of older turns (at most 200 words),
updated incrementally (only the turns that left the verbatim window are folded in) and
kept in Redis for clients to read. docs/distill.md ("Rolling context").
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from turngraph.schemas.defaults import ROLLING_SUMMARY_WORDS, ROLLING_VERBATIM_TURNS
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.schemas.keys import ROLLING_CONTEXT_PREFIX
from turngraph.schemas.recap import ContextTurn, RollingContext
from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.extractive import decisions_of
from turngraph.workers.maintenance.text import sentences, shorten
from turngraph.workers.maintenance.tool_calls import CHANGE, RUN, collapse, tool_name
from turngraph.workers.recall.text import estimate_tokens

__all__ = [
    "DECIDED", "ROLLING_TTL_S", "VERBATIM_TURN_CHARS", "fold", "load_rolling", "rolling_key",
    "update_rolling",
]  # fmt: skip

ROLLING_TTL_S = 14 * 24 * 3600
"""A rolling context nobody updated for two weeks expires."""

VERBATIM_TURN_CHARS = 800
"""About 200 tokens per verbatim turn (the plan's 800 tokens for four)."""

DECIDED = "Decided: "


def rolling_key(session_id: str) -> str:
    return ROLLING_CONTEXT_PREFIX + session_id


def load_rolling(conn: redis.Redis, session_id: str) -> RollingContext | None:
    raw = conn.get(rolling_key(session_id))
    if raw is None:
        return None
    return RollingContext.model_validate_json(raw)


def _key_lines(turns: Sequence[SessionTurn]) -> list[str]:
    """At most one line per turn: its decision, the request, or a consequential action."""
    decided = {turn.event_id: text for text, turn in decisions_of(turns)}
    lines: list[str] = []
    for turn in turns:
        if turn.event_id in decided:
            lines.append(DECIDED + shorten(decided[turn.event_id], 200))
        elif turn.role == "tool":
            if tool_name(turn) in CHANGE or tool_name(turn) in RUN:
                action = collapse(turn)
                if action:
                    lines.append(action)
        elif turn.role == "user":
            first = sentences(turn.content)
            if first:
                lines.append(f"User: {shorten(first[0], 200)}")
    return lines


def fold(summary: str, new_lines: Sequence[str], max_words: int = ROLLING_SUMMARY_WORDS) -> str:
    """``summary`` with ``new_lines`` appended, oldest lines dropped (decisions last) until
    it has at most ``max_words`` words."""
    lines = [line for line in summary.split("\n") if line] + list(new_lines)

    def words() -> int:
        return sum(len(line.split()) for line in lines)

    while words() > max_words and len(lines) > 1:
        victim = next((i for i, line in enumerate(lines) if not line.startswith(DECIDED)), 0)
        lines.pop(victim)
    if words() > max_words:
        lines = [" ".join(lines[0].split()[:max_words])]
    return "\n".join(lines)


def _verbatim(turn: SessionTurn) -> ContextTurn | None:
    if turn.role == "tool":
        action = collapse(turn)
        return (
            ContextTurn(turn_index=turn.turn_index, role="tool", content=action) if action else None
        )
    role = turn.role if turn.role in ("user", "assistant", "system") else "user"
    return ContextTurn(
        turn_index=turn.turn_index, role=role, content=shorten(turn.content, VERBATIM_TURN_CHARS)
    )


def update_rolling(distiller: Distiller, session_id: str) -> RollingContext | None:
    """Bring the session's rolling context up to its last stored turn (incrementally)."""
    with distiller.lock(f"rolling:{session_id}"):
        try:
            state = load_rolling(distiller.redis, session_id)
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable for the rolling context") from exc
        last = distiller.store.last_turn_index(session_id)
        if last is None:
            return state
        window_start = max(0, last - ROLLING_VERBATIM_TURNS + 1)
        summary = state.summary if state else ""
        folded_through = state.summarized_through if state else -1
        if folded_through + 1 <= window_start - 1:
            older = distiller.store.session_turns(session_id, folded_through + 1, window_start - 1)
            summary = fold(summary, _key_lines(older))
            folded_through = window_start - 1
        recent = [
            turn
            for turn in (
                _verbatim(t) for t in distiller.store.session_turns(session_id, window_start, last)
            )
            if turn is not None
        ]
        context = RollingContext(
            session_id=session_id,
            summary=summary,
            summarized_through=folded_through,
            recent=tuple(recent),
            tokens=estimate_tokens(summary) + sum(estimate_tokens(t.content) for t in recent),
            updated_at=distiller.now(),
        )
        try:
            distiller.redis.set(
                rolling_key(session_id), context.model_dump_json(), ex=ROLLING_TTL_S
            )
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable for the rolling context") from exc
        return context
