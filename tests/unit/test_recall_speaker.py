"""A question about someone lifts what that person said (``speaker_multiplier``)."""

from __future__ import annotations

import pytest

from tests.support.recall import NOW, memory, request
from workers.recall import scoring
from workers.recall.index import MemoryIndex
from workers.recall.scoring import SPEAKER_MULTIPLIER, query_names, speaker_multiplier
from workers.recall.search import search


def _chat() -> MemoryIndex:
    index = MemoryIndex()
    index.add(
        memory(
            "dana", "I got covid about a year ago and it knocked me out", extra={"speaker": "Dana"}
        )
    )
    index.add(
        memory(
            "sam",
            "Dana, when did you get covid? I got covid too",
            extra={"speaker": "Sam Ortiz"},
        )
    )
    for n in range(10):
        index.add(
            memory(f"f{n}", f"talking about lunch option {n}", extra={"speaker": "Sam Ortiz"})
        )
    return index


def test_the_named_persons_own_turn_outranks_a_stronger_lexical_match_by_someone_else(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    index = _chat()
    query = "When did Dana get covid?"
    named = search(index, request(query), NOW).results
    assert named[0].source_event_ids == ["e_dana"]
    assert named[0].score.speaker_multiplier == SPEAKER_MULTIPLIER
    assert named[1].source_event_ids == ["e_sam"]
    assert named[1].score.speaker_multiplier == 1.0
    score = named[0].score  # the breakdown still multiplies out to the final score
    product = score.semantic_score * score.recency_multiplier * score.status_multiplier
    product *= score.context_boost * score.speaker_multiplier * score.scope_multiplier
    assert score.final_score == pytest.approx(product, rel=1e-4, abs=1e-5)
    monkeypatch.setattr(scoring, "SPEAKER_MULTIPLIER", 1.0)  # without it, Sam's turn leads
    assert search(index, request(query), NOW).results[0].source_event_ids == ["e_sam"]


def test_a_name_matches_as_written_and_by_any_of_its_words() -> None:
    assert speaker_multiplier("Sam Ortiz", query_names("what did Ortiz say?")) > 1.0
    assert speaker_multiplier("Will", query_names("what will the deploy do?")) == 1.0
    assert speaker_multiplier("Will", query_names("what did Will deploy?")) > 1.0
    assert speaker_multiplier("Dana", query_names("Dana's plans for May")) > 1.0
    assert speaker_multiplier(None, query_names("Dana")) == 1.0
    assert speaker_multiplier("", query_names("Dana")) == 1.0
    assert speaker_multiplier("J", query_names("J said what")) == 1.0  # one letter is no name
