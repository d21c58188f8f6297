"""The offline summary reads like the seed schema, section by section; topics are stable;
compaction merges deterministically."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta

from turngraph.schemas.summaries import (
    ConversationSummary,
    SummaryContent,
    SummaryMethod,
    TimeScope,
    render_summary,
    summary_json_schema,
)
from turngraph.workers.graph.session_turns import Mention, SessionTurn
from turngraph.workers.maintenance.compaction import merge
from turngraph.workers.maintenance.extractive import extractive_summary, references_of
from turngraph.workers.maintenance.topics import match_existing, subject_words, topic_of

T0 = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)


def _turn(index: int, role: str, content: str, *mentions: Mention) -> SessionTurn:
    return SessionTurn(
        event_id=f"e{index}",
        session_id="s1",
        turn_index=index,
        role=role,
        content=content,
        occurred_at=T0 + timedelta(minutes=index),
        workspace="w1",
        user="u1",
        mentions=mentions,
    )


TURNS = [
    _turn(
        0,
        "user",
        "The export job times out on large workspaces; see src/export/writer.py and #31.",
        Mention("File", "src/export/writer.py"),
        Mention("Issue", "#31"),
    ),
    _turn(
        1,
        "assistant",
        "It loads every row into memory before writing. Streaming would keep memory flat.",
    ),
    _turn(
        2,
        "user",
        "We decided to stream rows in batches of 500 for the export writer, because memory "
        "must stay flat.",
        Mention(
            "Decision",
            "stream rows in batches of 500 for the export writer, because memory must stay flat",
            subject="export writer",
        ),
        Mention("Plan", "Plan 014"),
    ),
    _turn(3, "tool", "$ pytest tests/export\n" + "ok\n" * 40, Mention("Tool", "pytest")),
    _turn(
        4,
        "assistant",
        "Done. Should the batch size be configurable? Next I will add a setting for it "
        "on branch feat/export-stream.",
        Mention("Branch", "feat/export-stream"),
    ),
    _turn(
        5,
        "user",
        "preference: keep commit messages in the imperative mood",
        Mention("Preference", "keep commit messages in the imperative mood"),
    ),
]


def test_every_section_of_an_offline_summary() -> None:
    content = extractive_summary(TURNS, "Export writer")
    assert content.topic == "Export writer"
    assert content.context[0].startswith("The export job times out on large workspaces")
    assert any(
        "Segment of 6 turns" in line and "1 tool results" in line for line in content.context
    )
    # the preference is a memory of its own, not a decision
    assert content.decisions == ("Stream rows in batches of 500 for the export writer",)
    assert content.rationale[0].endswith("because memory must stay flat")
    assert content.open_questions == ("Should the batch size be configurable?",)
    assert content.next_steps == ("Next I will add a setting for it on branch feat/export-stream.",)
    refs = references_of(TURNS)
    assert refs.files == ("src/export/writer.py",)
    assert refs.issues == ("#31",)
    assert refs.plans == ("Plan 014",)
    assert refs.branches == ("feat/export-stream",)
    # tool output never reaches a bullet
    assert "ok ok" not in " ".join(content.context + content.next_steps)


def _summary(index: int, content: SummaryContent, days: int) -> ConversationSummary:
    start = T0 + timedelta(days=days)
    return ConversationSummary(
        id=f"sum_{index}",
        topic_id="job-queue",
        session_id=f"s{index}",
        workspace="w1",
        user="u1",
        content=content,
        time_scope=TimeScope(session_start=start, session_end=start + timedelta(hours=1)),
        first_turn=0,
        last_turn=3,
        source_event_ids=(f"e{index}a", f"e{index}b"),
        decision_event_ids=(f"e{index}b",),
        method=SummaryMethod.EXTRACTIVE,
        created_at=start + timedelta(hours=2),
    )


def test_rendered_summary_has_the_seed_sections() -> None:
    summary = _summary(1, extractive_summary(TURNS, "Export writer"), 0)
    text = render_summary(summary)
    for section in ("Topic:", "Context:", "Decisions:", "Rationale:", "OpenQuestions:",
                    "NextSteps:", "References:", "TimeScope:", "- SessionStart:"):  # fmt: skip
        assert section in text


def test_merge_is_deterministic_and_keeps_the_story() -> None:
    summaries = [
        _summary(1, SummaryContent(topic="Job queue", context=("c1",),
                 decisions=("Use RQ",), open_questions=("Do we need priorities in RQ?",)), 0),
        _summary(2, SummaryContent(topic="Job queue", context=("c2",),
                 decisions=("Use dramatiq",), rationale=("retries built in",)), 2),
        _summary(3, SummaryContent(topic="Job queue", context=("c3",),
                 decisions=("Use RQ with priorities after all",)), 5),
    ]  # fmt: skip
    record = merge("w1", summaries)
    shuffled = list(summaries)
    random.Random(7).shuffle(shuffled)
    assert merge("w1", shuffled) == record
    assert record.current_decision == "Use RQ with priorities after all"
    assert record.decisions == ("Use RQ", "Use dramatiq", "Use RQ with priorities after all")
    assert record.open_questions == ()  # answered by a later decision
    assert "then changed to: Use dramatiq" in record.narrative
    assert record.summary_ids == ("sum_1", "sum_2", "sum_3")
    assert record.decision_event_ids == ("e1b", "e2b", "e3b")


def test_topics() -> None:
    assert subject_words("job queue because it is simple") == "job queue"
    assert subject_words("the job queue after all") == "job queue"
    assert match_existing("job-queue-backend", ["job-queue", "queue"]) == "job-queue"
    assert match_existing("queue", ["job-queue"]) is None
    topic = topic_of(TURNS)
    assert topic.topic_id == "export-writer" and topic.plan_id == "Plan 014"
    assert topic.title == "Plan 014: Export writer"


def test_llm_schema_is_strict() -> None:
    schema = summary_json_schema()
    assert schema["additionalProperties"] is False
    assert set(schema["required"]) == set(SummaryContent.model_fields)  # type: ignore[arg-type]


def test_a_summary_never_lists_as_open_a_question_its_own_span_answered() -> None:
    turns = [
        _turn(0, "user", "Set up the bundler config for the new package please."),
        _turn(1, "assistant", "Which bundler does the project use? Do you want source maps?"),
        _turn(2, "user", "We use esbuild. Source maps too."),
        _turn(3, "user", "How should we version the package?"),
        _turn(4, "assistant", "Not sure yet. Is the registry private or public?"),
        _turn(5, "user", "Later on: the package versioning follows the calendar, like 2026.11."),
        _turn(6, "assistant", "Should the CI publish it on every tag?"),
    ]
    content = extractive_summary(turns, "bundler config")
    open_questions = " ".join(content.open_questions)
    assert "Which bundler" not in open_questions  # the next user turn answered it
    assert "source maps" not in open_questions
    assert "version the package" not in open_questions  # a later statement took it up
    assert "Should the CI publish it on every tag?" in content.open_questions  # no reply
    assert "Not sure yet." in content.open_questions  # an open cue, not a question


def test_a_topic_comes_from_what_the_span_is_about_not_a_keyword_accident() -> None:
    turns = [
        _turn(0, "user", "Let me tell you how I like my pull requests and commit messages."),
        _turn(1, "assistant", "Sure, what do you prefer for pull requests?"),
        _turn(
            2,
            "user",
            "Small pull requests, one concern each. We run RQ workers, whatever.",
            Mention("Tool", "RQ"),
        ),
        _turn(3, "assistant", "Got it: small pull requests. And commit messages?"),
        _turn(4, "user", "Commit messages in the imperative mood, pull requests squash-merged."),
    ]
    topic = topic_of(turns)
    assert topic.topic_id != "rq" and topic.title != "RQ"
    assert {"pull", "requests"} <= set(topic.topic_id.split("-")), topic
    named_twice = [*turns, _turn(5, "user", "RQ again: RQ retries.", Mention("Tool", "RQ"))]
    assert topic_of(named_twice).title == "RQ"  # a thing two turns name can be the topic


def test_a_stage_number_or_a_pronoun_is_no_topic() -> None:
    """Issue 20: RealMem grouped the summaries of 10-11 unrelated sessions of a workspace
    under the plan "Phase 1", and a decision "you ..." made the topic "You"."""
    turns = [
        _turn(0, "user", "I want to plan a cycling trip on the G318 road."),
        _turn(1, "assistant", "Phase 1 is Chengdu to Kangding.", Mention("Plan", "Phase 1")),
        _turn(2, "user", "The cycling trip needs rest days on the G318 road."),
    ]
    topic = topic_of(turns)
    assert topic.plan_id is None and "phase" not in topic.topic_id, topic
    assert not topic.title.startswith("Phase 1"), topic
    assert references_of(turns).plans == ("Phase 1",)  # still a reference
    named = [*turns[:2], _turn(2, "user", "see plan 012-queue-choice", Mention("Plan", "Plan 012"))]
    assert topic_of(named).plan_id == "Plan 012"
    assert subject_words("you should keep the cycling trip") == "keep cycling trip"


def test_a_contraction_or_an_adverb_is_no_topic() -> None:
    """Issue 35: summaries titled "Ll" (from "we'll", split at its apostrophe by the
    subject's normalisation) and "Always"."""
    for subject in ("we ll", "we'll", "we\u2019ll", "ll", "always", "we'll always", "don't"):
        assert subject_words(subject) == "", subject
    assert subject_words("we ll keep the retry budget") == "keep retry budget"
    assert subject_words("always squash merge requests") == "squash merge requests"
    assert subject_words("the api's rate limit") == "api rate limit"
    turns = [
        _turn(0, "user", "The nightly backup keeps failing on the staging database."),
        _turn(
            1,
            "assistant",
            "We'll always retry the nightly backup twice.",
            Mention("Decision", "we'll always retry the nightly backup twice", subject="we ll"),
        ),
        _turn(2, "user", "Good, and alert when the nightly backup fails twice."),
    ]
    topic = topic_of(turns)
    assert topic.title.casefold() not in ("ll", "always", "we ll"), topic
    assert "nightly" in topic.topic_id and "backup" in topic.topic_id, topic


def test_next_steps_are_work_taken_on_not_requirements() -> None:
    """Issue 35: "Next:" listed requirements ("The app needs to work offline") as steps."""
    turns = [
        _turn(0, "user", "The mobile app needs to work offline for field staff."),
        _turn(1, "user", "Sync is going to be tricky because the data model has to stay small."),
        _turn(2, "assistant", "It will need to queue writes. Users must be able to see status."),
        _turn(3, "assistant", "Next steps: draft the sync protocol and a conflict rule."),
        _turn(4, "assistant", "I'll write the outbox table first. Let me know if that works."),
        _turn(5, "user", "We still need to pick a storage engine. Then we test on a slow phone."),
    ]
    steps = extractive_summary(turns, "offline sync").next_steps
    assert steps == (
        "Next steps: draft the sync protocol and a conflict rule.",
        "I'll write the outbox table first.",
        "We still need to pick a storage engine.",
        "Then we test on a slow phone.",
    ), steps


def test_check_ins_and_cue_accidents_are_not_open_questions() -> None:
    """Issue 20: RealMem summaries listed "How does this initial plan sound to you?" and
    "Brisk walking (30-45 minutes)" ("risk") as open questions."""
    turns = [
        _turn(0, "user", "I want a workout plan I can fit around work."),
        _turn(1, "assistant", "Start with brisk walking (30-45 minutes) three days a week."),
        _turn(2, "assistant", "How does this initial plan sound to you? Anything else?"),
        _turn(3, "assistant", "The risk is overtraining in week one."),
        _turn(4, "user", "Is the gym near the office open before 8?"),
    ]
    content = extractive_summary(turns, "workout plan")
    assert content.open_questions == (
        "The risk is overtraining in week one.",
        "Is the gym near the office open before 8?",
    )
