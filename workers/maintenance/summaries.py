"""Making and storing ConversationSummaries: every N turns, on semantic triggers, on demand.

Stored at once from the extractive path; with an LLM configured, the LLM's summary
replaces it under the same id, and a failing LLM leaves it. Automatic summaries cover
consecutive segments of a session; an id derives from session and turn span, so making
one again rewrites the same node. docs/distill.md ("ConversationSummary").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

import structlog

from turngraph.schemas.ontology import DIRECTIVES
from turngraph.schemas.summaries import (
    ConversationSummary,
    SummaryContent,
    SummaryMethod,
    SummaryStatus,
    TimeScope,
    render_summary,
)
from turngraph.workers.graph.batch_plan import iso
from turngraph.workers.graph.recallable import UNSIGNALLED_ENTITY_TYPE
from turngraph.workers.graph.session_turns import SessionTurn
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.extractive import decisions_of, extractive_summary, references_of
from turngraph.workers.maintenance.memories import status_changes, summary_memory, upserts
from turngraph.workers.maintenance.topics import topic_of

__all__ = [
    "MAX_ENTITIES", "MAX_SEGMENT_TURNS", "build_summary", "covered_through", "load_summary",
    "mentioned_names", "replace_drafts", "store_summary", "summarize_last_turns",
    "summarize_session", "summary_uid", "topic_key", "with_llm_content", "workspace_topics",
]  # fmt: skip

log = structlog.get_logger(__name__)

MAX_SEGMENT_TURNS = 40
"""Longest segment in one summary; a longer backlog becomes several summaries."""


def summary_uid(session_id: str, first_turn: int, last_turn: int) -> str:
    digest = hashlib.sha256(f"{session_id}\x1f{first_turn}\x1f{last_turn}".encode()).hexdigest()
    return f"sum_{digest[:32]}"


def topic_key(workspace: str, topic_id: str) -> str:
    """One indexed property to find a topic's summaries and record by."""
    return f"{workspace}|{topic_id}"


def covered_through(distiller: Distiller, session_id: str) -> int:
    """The last turn an automatic summary of the session covers (-1: none yet)."""
    return max((s.last_turn for s in distiller.store.session_summaries(session_id)), default=-1)


def workspace_topics(distiller: Distiller, workspace: str) -> list[str]:
    return distiller.store.workspace_topics(workspace)


MAX_ENTITIES = 50


def mentioned_names(turns: Sequence[SessionTurn]) -> tuple[str, ...]:
    """What the turns mention, most mentioned first (decisions and directives left out:
    their names are whole clauses; people too, as for turns: a speaker would top every
    list)."""
    counts: dict[str, int] = {}
    for turn in turns:
        for mention in turn.mentions:
            if mention.type not in DIRECTIVES and mention.type != UNSIGNALLED_ENTITY_TYPE:
                counts[mention.name] = counts.get(mention.name, 0) + 1
    ranked = sorted(counts, key=lambda name: (-counts[name], name))
    return tuple(ranked[:MAX_ENTITIES])


def build_summary(
    distiller: Distiller, turns: Sequence[SessionTurn], *, status: SummaryStatus, now: datetime
) -> ConversationSummary:
    """A summary of ``turns`` (one session, in order) by the extractive path: no LLM call
    (:func:`with_llm_content` replaces its content once the LLM answers)."""
    first, last = turns[0], turns[-1]
    topic = topic_of(turns, workspace_topics(distiller, first.workspace))
    references = references_of(turns)
    content: SummaryContent = extractive_summary(turns, topic.title)
    method = SummaryMethod.EXTRACTIVE
    decided = decisions_of(turns, directives=False)
    return ConversationSummary(
        id=summary_uid(first.session_id, first.turn_index, last.turn_index),
        topic_id=topic.topic_id,
        session_id=first.session_id,
        workspace=first.workspace,
        user=first.user,
        plan_id=topic.plan_id,
        status=status,
        content=content,
        references=references,
        time_scope=TimeScope(session_start=first.occurred_at, session_end=last.occurred_at),
        first_turn=first.turn_index,
        last_turn=last.turn_index,
        source_event_ids=tuple(t.event_id for t in turns),
        decision_event_ids=tuple(dict.fromkeys(turn.event_id for _, turn in decided)),
        entities=mentioned_names(turns),
        method=method,
        created_at=now,
    )


def with_llm_content(
    distiller: Distiller, summary: ConversationSummary, turns: Sequence[SessionTurn]
) -> ConversationSummary:
    """The stored extractive ``summary`` replaced by the LLM's (same id, status and
    span; ``method: llm``), once the LLM answers; unchanged when no LLM is configured or
    it failed (counted and logged by the summarizer)."""
    if distiller.summarizer is None:
        return summary
    content, used = distiller.summarizer.summarize(
        turns, summary.content, summary.references.model_dump(mode="json")
    )
    if not used:
        return summary
    improved = summary.model_copy(update={"content": content, "method": SummaryMethod.LLM})
    store_summary(distiller, improved)
    return improved


def store_summary(distiller: Distiller, summary: ConversationSummary) -> None:
    """Write the summary node and its links (one transaction), then tell recall."""
    memory = summary_memory(summary)
    row = {
        "uid": summary.id,
        "created_at": iso(summary.created_at),
        "status": summary.status.value,
        "topic": summary.content.topic,
        "topic_id": summary.topic_id,
        "topic_key": topic_key(summary.workspace, summary.topic_id),
        "plan_id": summary.plan_id,
        "session_id": summary.session_id,
        "workspace": summary.workspace,
        "user": summary.user,
        "first_turn": summary.first_turn,
        "last_turn": summary.last_turn,
        "time_start": iso(summary.time_scope.session_start),
        "time_end": iso(summary.time_scope.session_end),
        "method": summary.method.value,
        "text": render_summary(summary),
        "summary": summary.model_dump_json(),
        "memory": memory.model_dump_json(),
        "source_event_ids": list(summary.source_event_ids),
        "decision_event_ids": list(summary.decision_event_ids),
    }
    distiller.store.upsert_summary(row)
    distiller.announce(upserts([memory]))
    log.info(
        "summary_stored",
        summary_id=summary.id,
        turns=len(summary.source_event_ids),
        method=summary.method.value,
    )


def summarize_session(
    distiller: Distiller, session_id: str, *, through_turn: int | None = None
) -> list[ConversationSummary]:
    """The session's next automatic summaries: the turns after the last covered one,
    up to ``through_turn`` (default: the last stored), in segments of at most
    ``MAX_SEGMENT_TURNS``. One summarizer per session at a time (a lock)."""
    made: list[ConversationSummary] = []
    with distiller.lock(f"summary:{session_id}"):
        last = through_turn
        if last is None:
            last = distiller.store.last_turn_index(session_id)
        if last is None:
            return made
        first = covered_through(distiller, session_id) + 1
        if first > last:
            return made
        turns = distiller.store.session_turns(session_id, first, last)
        segments = [
            turns[start : start + MAX_SEGMENT_TURNS]
            for start in range(0, len(turns), MAX_SEGMENT_TURNS)
        ]
        for segment in segments:  # every summary exists at once, from the extractive path
            summary = build_summary(
                distiller, segment, status=SummaryStatus.DRAFT, now=distiller.now()
            )
            store_summary(distiller, summary)
            made.append(summary)
        # then the LLM's, where it answers, replace them one by one
        return [with_llm_content(distiller, s, seg) for s, seg in zip(made, segments, strict=True)]


def summarize_last_turns(
    distiller: Distiller, session_id: str, last_n: int
) -> ConversationSummary | None:
    """On demand: a Final summary of the session's last ``last_n`` turns, stored."""
    if last_n < 1:
        raise ValueError("last_n must be at least 1")
    last = distiller.store.last_turn_index(session_id)
    if last is None:
        return None
    turns = distiller.store.session_turns(session_id, max(0, last - last_n + 1), last)
    turns = turns[-last_n:]
    if not turns:
        return None
    summary = build_summary(distiller, turns, status=SummaryStatus.FINAL, now=distiller.now())
    store_summary(distiller, summary)
    replace_drafts(distiller, summary)
    return with_llm_content(distiller, summary, turns)


def replace_drafts(distiller: Distiller, final: ConversationSummary) -> list[str]:
    """One copy per span: the session's Drafts that lie mostly inside the Final's span
    (at least half of their turns) become Superseded, ``superseded_by`` the Final, and
    recall is told; returns their ids."""
    replaced = []
    for span in distiller.store.session_summaries(final.session_id):
        first, last = span.first_turn, span.last_turn
        inside = min(last, final.last_turn) - max(first, final.first_turn) + 1
        if span.status == SummaryStatus.DRAFT.value and 2 * inside >= last - first + 1:
            replaced.append(span.uid)
    if not replaced:
        return []
    statuses = distiller.store.replace_drafts(replaced, final.id)
    superseded = [uid for uid, status in statuses if status == "Superseded"]
    distiller.announce(status_changes(superseded, "Superseded"))
    log.info("summary_drafts_replaced", summary_id=final.id, replaced=len(superseded))
    return superseded


def load_summary(distiller: Distiller, uid: str) -> ConversationSummary | None:
    """A stored summary by id, with its current status."""
    stored = distiller.store.summary(uid)
    if stored is None:
        return None
    summary = ConversationSummary.model_validate_json(stored.json)
    return summary.model_copy(update={"status": SummaryStatus(stored.status)})
