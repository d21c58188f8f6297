"""Session recap and rolling context: what a next session (or a long one) is handed.

``SessionRecap`` follows ``seeds/session-recap.md``, ``RollingContext``
``seeds/conversation-memory-plan.md`` §7 (ready to send as a recall request's
``conversation_context``). docs/distill.md ("Session recap", "Rolling context").
"""

from __future__ import annotations

from typing import Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

__all__ = ["RECAP_SCHEMA_VERSION", "ContextTurn", "RecapSection", "RollingContext", "SessionRecap"]

RECAP_SCHEMA_VERSION: Literal[1] = 1


class RecapSection(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    first_turn: int
    last_turn: int
    text: str
    score: float
    tokens: int
    source_event_ids: tuple[str, ...]


class SessionRecap(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = RECAP_SCHEMA_VERSION
    session_id: str
    workspace: str
    user: str
    budget_tokens: int
    tokens: int
    turns: int
    chunks: int
    """Chunks after merging similar neighbours (before selection)."""
    sections: tuple[RecapSection, ...]
    """The selected chunk summaries, in session order; the last is where work stopped."""
    text: str
    session_start: AwareDatetime
    session_end: AwareDatetime


class ContextTurn(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    turn_index: int
    role: Literal["user", "assistant", "system", "tool"]
    content: str


class RollingContext(BaseModel):
    """Kept in Redis per session; producers read it directly."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = RECAP_SCHEMA_VERSION
    session_id: str
    summary: str = ""
    """Rolling summary of turns up to ``summarized_through`` (at most 200 words)."""
    summarized_through: int = -1
    recent: tuple[ContextTurn, ...] = Field(default=(), max_length=8)
    """The last turns, verbatim (tool turns collapsed to one line)."""
    tokens: int = 0
    updated_at: AwareDatetime

    def conversation_context(self) -> list[dict[str, str]]:
        """As ``RecallRequest.conversation_context``: the summary first, then the turns."""
        turns: list[dict[str, str]] = []
        if self.summary:
            turns.append({"role": "system", "content": f"Earlier in this session: {self.summary}"})
        turns += [{"role": t.role, "content": t.content} for t in self.recent]
        return turns
