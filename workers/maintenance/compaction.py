"""Compaction: a topic's summaries merged into one DecisionRecord (seed: "periodically
merge multiple small summaries into curated decision records").

The record is a pure function of its topic's summaries; one transaction writes it and
marks every merged summary Superseded (linked by ``SUPERSEDES``), and a per-topic lock
serialises compactors, so any number of runs write the same graph. docs/distill.md
("DecisionRecord").
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime, timedelta

import structlog

from turngraph.schemas.summaries import (
    ConversationSummary,
    DecisionRecord,
    SummaryReferences,
    SummaryStatus,
    TimeScope,
    render_decision_record,
)
from turngraph.workers.graph.batch_plan import iso
from turngraph.workers.maintenance.context import Distiller
from turngraph.workers.maintenance.memories import decision_record_memory, status_changes, upserts
from turngraph.workers.maintenance.summaries import topic_key
from turngraph.workers.maintenance.text import words

__all__ = [
    "MAX_DECISIONS", "MAX_NEXT_STEPS", "MAX_OPEN_QUESTIONS", "MAX_RATIONALE", "QUESTION_WORDS",
    "RESOLVED_OVERLAP", "compact_due", "compact_topic", "merge", "record_uid", "topic_summaries",
]  # fmt: skip

log = structlog.get_logger(__name__)

MAX_DECISIONS = 12
MAX_RATIONALE = 6
MAX_OPEN_QUESTIONS = 5
MAX_NEXT_STEPS = 5

RESOLVED_OVERLAP = 0.6
"""An open question counts as answered when this share of its words is in a later
decision."""


def record_uid(workspace: str, topic_id: str) -> str:
    digest = hashlib.sha256(f"{workspace}\x1f{topic_id}".encode()).hexdigest()
    return f"dr_{digest[:32]}"


def _union(items: Sequence[str], keep_last: int) -> tuple[str, ...]:
    seen: dict[str, str] = {}
    for item in items:
        key = item.casefold()
        seen.pop(key, None)  # a repeated item counts where it was last said
        seen[key] = item
    return tuple(list(seen.values())[-keep_last:])


def _date(moment: datetime) -> str:
    return moment.date().isoformat()


QUESTION_WORDS = frozenset(
    {
        "need", "should", "what", "which", "does", "will", "have", "with", "this", "that",
        "there", "about", "would", "could", "still", "when", "where", "whether", "they",
    }
)  # fmt: skip


def _resolved(question: str, later_decisions: Sequence[str]) -> bool:
    asked = {w for w in words(question) if len(w) > 3 and w not in QUESTION_WORDS}
    if not asked:
        return False
    return any(len(asked & words(d)) / len(asked) >= RESOLVED_OVERLAP for d in later_decisions)


def _narrative(ordered: Sequence[ConversationSummary]) -> str:
    steps = [
        (s.content.decisions[-1], s.time_scope.session_end) for s in ordered if s.content.decisions
    ]
    sessions = len({s.session_id for s in ordered})
    start, end = ordered[0].time_scope.session_start, ordered[-1].time_scope.session_end
    span = f"{_date(start)} to {_date(end)}"
    head = f"Compacted from {len(ordered)} summaries of {sessions} session(s), {span}."
    if not steps:
        return f"{head} No explicit decision yet; latest context: {ordered[-1].content.context[0]}"
    story = [f"first decided: {steps[0][0]} ({_date(steps[0][1])})"]
    previous = steps[0][0]
    for decision, when in steps[1:]:
        if decision.casefold() != previous.casefold():
            story.append(f"then changed to: {decision} ({_date(when)})")
            previous = decision
    return f"{head} {'; '.join(story)}."


def merge(workspace: str, summaries: Sequence[ConversationSummary]) -> DecisionRecord:
    """The record of ``summaries`` (one topic of one workspace, at least one)."""
    ordered = sorted(
        summaries, key=lambda s: (s.time_scope.session_end, s.session_id, s.first_turn, s.id)
    )
    latest = ordered[-1]
    decisions = [d for s in ordered for d in s.content.decisions]
    questions: list[str] = []
    for position, summary in enumerate(ordered):
        later = [d for s in ordered[position + 1 :] for d in s.content.decisions]
        questions += [q for q in summary.content.open_questions if not _resolved(q, later)]
    references = SummaryReferences()
    for summary in ordered:
        references = references.merged(summary.references)
    plan = next((s.plan_id for s in reversed(ordered) if s.plan_id), None)
    return DecisionRecord(
        id=record_uid(workspace, latest.topic_id),
        topic_id=latest.topic_id,
        topic=latest.content.topic,
        workspace=workspace,
        user=latest.user,
        plan_id=plan,
        current_decision=decisions[-1] if decisions else None,
        decisions=_union(decisions, MAX_DECISIONS),
        rationale=_union([r for s in ordered for r in s.content.rationale], MAX_RATIONALE),
        open_questions=_union(questions, MAX_OPEN_QUESTIONS),
        next_steps=latest.content.next_steps[:MAX_NEXT_STEPS],
        references=references,
        narrative=_narrative(ordered),
        summary_ids=tuple(s.id for s in ordered),
        source_event_ids=tuple(dict.fromkeys(e for s in ordered for e in s.source_event_ids)),
        decision_event_ids=tuple(dict.fromkeys(e for s in ordered for e in s.decision_event_ids)),
        entities=tuple(dict.fromkeys(e for s in reversed(ordered) for e in s.entities))[:50],
        time_scope=TimeScope(
            session_start=min(s.time_scope.session_start for s in ordered),
            session_end=max(s.time_scope.session_end for s in ordered),
        ),
    )


def topic_summaries(
    distiller: Distiller, workspace: str, topic_id: str
) -> list[ConversationSummary]:
    found = []
    for stored in distiller.store.topic_summaries(topic_key(workspace, topic_id)):
        summary = ConversationSummary.model_validate_json(stored.json)
        found.append(summary.model_copy(update={"status": SummaryStatus(stored.status)}))
    return found


def compact_topic(
    distiller: Distiller, workspace: str, topic_id: str, *, force: bool = True
) -> DecisionRecord | None:
    """Merge the topic's summaries into its DecisionRecord. Without ``force``, only when
    its open summaries reached ``compact_min_summaries`` (or are old enough and more
    than one). Only a topic with a decision gets a record: summaries that decided nothing
    stay open. Returns the record written (None: nothing to do)."""
    with distiller.lock(f"compact:{topic_key(workspace, topic_id)}"):
        summaries = topic_summaries(distiller, workspace, topic_id)
        still_open = [s for s in summaries if s.status is not SummaryStatus.SUPERSEDED]
        if not still_open:
            return None
        if not force and not _due(distiller, still_open, len(summaries) > len(still_open)):
            return None
        if not any(s.content.decisions for s in summaries):
            # a record stands for a decision: summaries that decided nothing stay what
            # they are (RealMem: "Phase 1: no decision yet" records of up to 48 turns
            # across unrelated sessions, each taking the top 10 of a question)
            log.info("topic_not_compacted", reason="no_decision", summaries=len(summaries))
            return None
        record = merge(workspace, summaries)
        memory = decision_record_memory(record, created_at=record.time_scope.session_end)
        row = {
            "uid": record.id,
            "created_at": iso(distiller.now()),
            "updated_at": iso(record.time_scope.session_end),
            "topic": record.topic,
            "topic_id": record.topic_id,
            "topic_key": topic_key(workspace, record.topic_id),
            "plan_id": record.plan_id,
            "workspace": workspace,
            "user": record.user,
            "current_decision": record.current_decision,
            "text": render_decision_record(record),
            "record": record.model_dump_json(),
            "memory": memory.model_dump_json(),
            "source_event_ids": list(memory.source_event_ids),
            "summary_uids": list(record.summary_ids),
        }
        distiller.store.upsert_decision_record(row)
        distiller.announce(
            [*upserts([memory]), *status_changes((s.id for s in still_open), "Superseded")]
        )
    log.info("topic_compacted", record_id=record.id, summaries=len(record.summary_ids))
    return record


def _due(distiller: Distiller, still_open: Sequence[ConversationSummary], has_record: bool) -> bool:
    options = distiller.options
    if len(still_open) >= options.compact_min_summaries:
        return True
    oldest = min(s.created_at for s in still_open)
    aged = distiller.now() - oldest >= timedelta(days=options.compact_after_days)
    return aged and (len(still_open) >= 2 or has_record)


def compact_due(distiller: Distiller) -> list[DecisionRecord]:
    """The periodic sweep: every topic whose open summaries are due, in every workspace."""
    written: list[DecisionRecord] = []
    for workspace in distiller.store.workspaces_with_open_summaries():
        for topic in distiller.store.open_topics(workspace):
            aged = distiller.now() - topic.oldest >= timedelta(
                days=distiller.options.compact_after_days
            )
            if topic.open >= distiller.options.compact_min_summaries or aged:
                record = compact_topic(distiller, workspace, topic.topic_id, force=False)
                if record is not None:
                    written.append(record)
    return written
