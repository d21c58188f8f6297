"""Distilled memory: conversation summaries and the decision records they compact into.

The schema is the one of ``seeds/summaries-and-agent-instructions.md`` (Topic, Context,
Decisions, Rationale, OpenQuestions, NextSteps, References, TimeScope; ``topic_id``,
``session_id``, ``plan_id``; statuses Draft / Final / Superseded), kept as pydantic models
so the graph, the change stream and an LLM's structured answer share one definition.
``render_summary`` / ``render_decision_record`` give the seed's text form, which is what
recall returns and what the "show the full summary" request prints.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field

__all__ = [
    "MAX_ITEM_CHARS", "SUMMARY_SCHEMA_NAME", "SUMMARY_SCHEMA_VERSION", "Bullet",
    "ConversationSummary", "DecisionRecord", "SummaryContent", "SummaryMethod",
    "SummaryReferences", "SummaryStatus", "TimeScope", "render_decision_record", "render_summary",
    "summary_json_schema",
]  # fmt: skip

SUMMARY_SCHEMA_VERSION: Literal[1] = 1
"""Bumped on any incompatible change of the models in this module."""

MAX_ITEM_CHARS = 400
"""Longest bullet; longer ones are cut by the builders, and rejected from an LLM."""


class SummaryStatus(StrEnum):
    """A summary's life: Draft when made, Final when its segment is closed, Superseded once
    compaction folded it into a decision record (kept for audit, never deleted)."""

    DRAFT = "Draft"
    FINAL = "Final"
    SUPERSEDED = "Superseded"


class SummaryMethod(StrEnum):
    LLM = "llm"
    EXTRACTIVE = "extractive"


Bullet = Annotated[str, Field(min_length=1, max_length=MAX_ITEM_CHARS)]
"""One bullet of a section."""


class SummaryReferences(BaseModel):
    """What the segment points at (seed: Files, Plans, Branches, Issues)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    files: tuple[str, ...] = Field(default=(), max_length=30)
    plans: tuple[str, ...] = Field(default=(), max_length=10)
    branches: tuple[str, ...] = Field(default=(), max_length=10)
    issues: tuple[str, ...] = Field(default=(), max_length=20)

    def merged(self, other: SummaryReferences) -> SummaryReferences:
        """The union, first-seen order, within the field bounds."""
        return SummaryReferences(
            files=_union(self.files, other.files)[:30],
            plans=_union(self.plans, other.plans)[:10],
            branches=_union(self.branches, other.branches)[:10],
            issues=_union(self.issues, other.issues)[:20],
        )


class TimeScope(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    session_start: AwareDatetime
    session_end: AwareDatetime


class SummaryContent(BaseModel):
    """The sections a summarizer writes (an LLM answers exactly this, as JSON)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    topic: str = Field(min_length=1, max_length=120, description="short title of the focus")
    context: tuple[Bullet, ...] = Field(
        min_length=1, max_length=3, description="what was worked on and why"
    )
    decisions: tuple[Bullet, ...] = Field(default=(), max_length=5)
    rationale: tuple[Bullet, ...] = Field(default=(), max_length=3)
    open_questions: tuple[Bullet, ...] = Field(default=(), max_length=5)
    next_steps: tuple[Bullet, ...] = Field(default=(), max_length=5)


class ConversationSummary(BaseModel):
    """One summarized segment of a session (turns ``first_turn`` … ``last_turn``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SUMMARY_SCHEMA_VERSION
    id: str = Field(pattern=r"^[A-Za-z0-9_-]{1,128}$")
    topic_id: str = Field(min_length=1, max_length=120)
    session_id: str
    workspace: str
    user: str
    plan_id: str | None = None
    status: SummaryStatus = SummaryStatus.DRAFT
    content: SummaryContent
    references: SummaryReferences = SummaryReferences()
    time_scope: TimeScope
    first_turn: int = Field(ge=0)
    last_turn: int = Field(ge=0)
    source_event_ids: tuple[str, ...] = Field(min_length=1)
    decision_event_ids: tuple[str, ...] = ()
    """The turns that stated the segment's decisions (a subset of ``source_event_ids``)."""
    entities: tuple[str, ...] = Field(default=(), max_length=50)
    """Names of what the segment's turns mention (recall's graph signal finds it by them)."""
    method: SummaryMethod
    created_at: AwareDatetime


class DecisionRecord(BaseModel):
    """The compacted memory of one topic in one workspace: the union of its summaries'
    decisions and rationale, what is still open, and a short narrative of how it got here.

    ``decisions`` is chronological; ``current_decision`` is the latest one (the record is
    "Final": the committed state of the topic). Deterministic in the set of summaries it
    merges: compaction may run twice, or on two workers, and write the same record.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_version: Literal[1] = SUMMARY_SCHEMA_VERSION
    id: str
    topic_id: str
    topic: str
    workspace: str
    user: str
    plan_id: str | None = None
    status: Literal["Final"] = "Final"
    current_decision: str | None = None
    decisions: tuple[Bullet, ...] = ()
    rationale: tuple[Bullet, ...] = ()
    open_questions: tuple[Bullet, ...] = ()
    next_steps: tuple[Bullet, ...] = ()
    references: SummaryReferences = SummaryReferences()
    narrative: str
    summary_ids: tuple[str, ...] = Field(min_length=1)
    source_event_ids: tuple[str, ...] = Field(min_length=1)
    decision_event_ids: tuple[str, ...] = ()
    entities: tuple[str, ...] = Field(default=(), max_length=50)
    time_scope: TimeScope


def _union(*groups: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(item for group in groups for item in group if item))


def _bullets(items: tuple[str, ...]) -> list[str]:
    return [f"- {item}" for item in items] or ["- None"]


def _references(refs: SummaryReferences) -> list[str]:
    def field(values: tuple[str, ...]) -> str:
        return ", ".join(values) or "None"

    return [
        f"- Files: {field(refs.files)}",
        f"- Plans: {field(refs.plans)}",
        f"- Branches: {field(refs.branches)}",
        f"- Issues: {field(refs.issues)}",
    ]


def _when(moment: datetime) -> str:
    return moment.isoformat(timespec="minutes")


def render_summary(summary: ConversationSummary) -> str:
    """The seed's text form of a summary (what recall returns in full)."""
    c = summary.content
    lines = [f"Topic: {c.topic}", "", "Context:", *_bullets(c.context), ""]
    lines += ["Decisions:", *_bullets(c.decisions), ""]
    lines += ["Rationale:", *_bullets(c.rationale), ""]
    lines += ["OpenQuestions:", *_bullets(c.open_questions), ""]
    lines += ["NextSteps:", *_bullets(c.next_steps), ""]
    lines += ["References:", *_references(summary.references), ""]
    lines += [
        "TimeScope:",
        f"- SessionStart: {_when(summary.time_scope.session_start)}",
        f"- SessionEnd: {_when(summary.time_scope.session_end)}",
    ]
    return "\n".join(lines)


def render_decision_record(record: DecisionRecord) -> str:
    """A decision record in the same schema, led by the current decision and its story."""
    lines = [f"Topic: {record.topic}", "", f"DecisionRecord ({record.status}):"]
    if record.current_decision:
        lines.append(f"- Current decision: {record.current_decision}")
    lines += [f"- {record.narrative}", "", "Decisions:", *_bullets(record.decisions), ""]
    lines += ["Rationale:", *_bullets(record.rationale), ""]
    lines += ["OpenQuestions:", *_bullets(record.open_questions), ""]
    lines += ["NextSteps:", *_bullets(record.next_steps), ""]
    lines += ["References:", *_references(record.references), ""]
    lines += [
        "TimeScope:",
        f"- SessionStart: {_when(record.time_scope.session_start)}",
        f"- SessionEnd: {_when(record.time_scope.session_end)}",
    ]
    return "\n".join(lines)


SUMMARY_SCHEMA_NAME = "turngraph_conversation_summary"
"""The ``json_schema.name`` sent to the LLM endpoint."""


def summary_json_schema() -> dict[str, object]:
    """JSON Schema of :class:`SummaryContent` for OpenAI structured output (strict mode:
    every property required, no additional ones, no length keywords; lengths are checked
    by the model when the answer is validated)."""
    properties: dict[str, object] = {}
    for name, info in SummaryContent.model_fields.items():
        if name == "topic":
            properties[name] = {"type": "string", "description": info.description or ""}
        else:
            bound = next((m.max_length for m in info.metadata if hasattr(m, "max_length")), 5)
            properties[name] = {
                "type": "array",
                "items": {"type": "string"},
                "description": f"{info.description or name.replace('_', ' ')}; "
                f"at most {bound} short bullets",
            }
    return {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
