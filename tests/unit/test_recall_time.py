"""Time-robust ranking: relevance first, recency among near-equals, time named in queries."""

from __future__ import annotations

from datetime import timedelta

import pytest

from tests.support.recall import NOW, memory, request
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.search import search
from turngraph.workers.recall.timeq import TimeMode, parse_time


def _ids(index: MemoryIndex, query: str, **fields: object) -> list[str]:
    response = search(index, request(query, **fields), NOW)
    return [r.source_event_ids[0] for r in response.results]


def test_a_clearly_relevant_year_old_memory_outranks_a_weak_one_from_today() -> None:
    index = MemoryIndex()
    index.add(
        memory(
            "old",
            "We migrated the billing database from MySQL to Postgres over one weekend",
            days_ago=365,
        )
    )
    index.add(memory("new", "The weekend hiking plan is still on", days_ago=0.1))
    for n in range(20):
        index.add(memory(f"f{n}", f"unrelated chat about lunch option {n}", days_ago=30))
    ranked = _ids(index, "how did we migrate the billing database to Postgres?")
    assert ranked[0] == "e_old"


def test_of_two_equally_relevant_memories_the_newer_ranks_first() -> None:
    index = MemoryIndex()
    index.add(memory("older", "The deploy pipeline runs the smoke tests first", days_ago=60))
    index.add(memory("newer", "The deploy pipeline runs the smoke tests first!", days_ago=2))
    index.add(memory("other", "Lunch was pizza again", days_ago=1))
    response = search(index, request("what does the deploy pipeline run first?"), NOW)
    first = response.results[0]
    assert first.source_event_ids[0] == "e_newer"  # the near-duplicate merged into it
    assert first.score.recency_multiplier > 0.8
    score = first.score
    product = score.semantic_score * score.recency_multiplier * score.status_multiplier
    product *= score.context_boost * score.scope_multiplier * score.role_multiplier
    assert score.final_score == pytest.approx(product, rel=1e-4, abs=1e-5)  # honest breakdown


def test_last_week_prefers_last_weeks_turns() -> None:
    index = MemoryIndex()
    index.add(memory("lastweek", "We talked about the concert tickets for Saturday", days_ago=8))
    index.add(memory("today", "We talked about the concert tickets again", days_ago=0.2))
    index.add(memory("months", "We talked about concert tickets for the summer", days_ago=90))
    ranked = _ids(index, "what did we say about concert tickets last week?")
    assert ranked[0] == "e_lastweek"
    plain = _ids(index, "what did we say about concert tickets?")
    assert plain[0] == "e_today"  # without the time phrase the newest near-equal leads


def test_in_month_names_the_most_recent_such_month() -> None:
    intent = parse_time("what did Kate cook in March?", NOW)  # NOW is November 2026
    assert intent.mode is TimeMode.WINDOW
    assert intent.start is not None and intent.start.year == 2026 and intent.start.month == 3
    assert "March" not in intent.query and "cook" in intent.query
    january = parse_time("in January?", NOW.replace(month=1, day=5))
    assert january.start is not None and january.start.year == 2026
    december = parse_time("during December", NOW.replace(month=1, day=5))
    assert december.start is not None and december.start.year == 2025


def test_time_phrases() -> None:
    yesterday = parse_time("what did I do yesterday", NOW)
    assert yesterday.mode is TimeMode.WINDOW and yesterday.contains(NOW - timedelta(days=1))
    assert not yesterday.contains(NOW - timedelta(days=3))
    assert parse_time("when did she move to Austin?", NOW).mode is TimeMode.NEUTRAL
    assert parse_time("what is the latest on the visa?", NOW).mode is TimeMode.LATEST
    assert parse_time("what hobbies does Kate have?", NOW).mode is TimeMode.DEFAULT
    weeks = parse_time("anything in the past 3 weeks about rent", NOW)
    assert weeks.contains(NOW - timedelta(days=20)) and not weeks.contains(NOW - timedelta(days=25))
    only_time = parse_time("last week", NOW)
    assert only_time.query == "last week"  # nothing else to match: keep the words


def test_when_questions_do_not_prefer_new_memories() -> None:
    index = MemoryIndex()
    index.add(memory("old", "I moved to Austin for the new job", days_ago=200))
    index.add(memory("new", "Austin traffic was bad, the job is fine", days_ago=1))
    response = search(index, request("when did you move to Austin for the job?"), NOW)
    assert response.results[0].source_event_ids[0] == "e_old"
    assert all(r.score.recency_multiplier == 1.0 for r in response.results)


def test_speaker_names_are_searchable() -> None:
    index = MemoryIndex()
    index.add(memory("kate", "I finally tried the pottery class", extra={"speaker": "Kate"}))
    index.add(memory("tom", "I finally tried the climbing gym", extra={"speaker": "Tom"}))
    ranked = _ids(index, "what did Kate finally try?")
    assert ranked[0] == "e_kate"
    result = search(index, request("what did Kate finally try?"), NOW).results[0]
    assert result.text == "I finally tried the pottery class"  # the name is indexed, not added
