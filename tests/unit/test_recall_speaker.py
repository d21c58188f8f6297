"""A question about someone lifts what that person said (``speaker_multiplier``)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from tests.support.recall import NOW, memory, request
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.embeddings.protocol import Vectors
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT, Ranking
from turngraph.workers.recall.search import search
from turngraph.workers.recall.speakers import (
    name_words,
    persons_of,
    query_names,
    speaker_multiplier,
    without_names,
)


def _chat(ranking: Ranking = DEFAULT) -> MemoryIndex:
    index = MemoryIndex(ranking=ranking)
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


def test_the_named_persons_own_turn_outranks_a_stronger_lexical_match_by_someone_else() -> None:
    index = _chat()
    query = "When did Dana get covid?"
    named = search(index, request(query), NOW).results
    assert named[0].source_event_ids == ["e_dana"]
    assert named[0].score.speaker_multiplier == DEFAULT.person_multiplier
    assert named[1].source_event_ids == ["e_sam"]
    assert named[1].score.speaker_multiplier == 1.0
    score = named[0].score  # the breakdown still multiplies out to the final score
    product = score.semantic_score * score.recency_multiplier * score.status_multiplier
    product *= score.context_boost * score.speaker_multiplier * score.scope_multiplier
    product *= score.role_multiplier
    assert score.final_score == pytest.approx(product, rel=1e-4, abs=1e-5)
    unlifted = _chat(DEFAULT.with_values(speaker_multiplier=1.0, person_multiplier=1.0))
    # then Sam's turn leads
    assert search(unlifted, request(query), NOW).results[0].source_event_ids == ["e_sam"]


def test_a_name_matches_as_written_and_by_any_of_its_words() -> None:
    assert speaker_multiplier("Sam Ortiz", query_names("what did Ortiz say?"), 1.6) > 1.0
    assert speaker_multiplier("Will", query_names("what will the deploy do?"), 1.6) == 1.0
    assert speaker_multiplier("Will", query_names("what did Will deploy?"), 1.6) > 1.0
    assert speaker_multiplier("Dana", query_names("Dana's plans for May"), 1.6) > 1.0
    assert speaker_multiplier(None, query_names("Dana"), 1.6) == 1.0
    assert speaker_multiplier("", query_names("Dana"), 1.6) == 1.0
    assert speaker_multiplier("J", query_names("J said what"), 1.6) == 1.0  # one letter is no name


def test_a_handle_in_lower_case_is_named_capitalised_and_a_role_is_no_person() -> None:
    named = query_names("What did Elise cook?")
    assert speaker_multiplier("elise", named, 1.6, 3.0) == 3.0
    assert speaker_multiplier("Elise", named, 1.6, 3.0) == 3.0
    assert speaker_multiplier("elise", query_names("what did elise cook?"), 1.6, 3.0) == 3.0
    assert speaker_multiplier("Elise", query_names("what did elise cook?"), 1.6, 3.0) == 1.0
    # a role keeps the speaker multiplier, as written only: "Assistant" names no turn
    assert speaker_multiplier("user", query_names("how does the user want it?"), 1.6, 3.0) == 1.6
    assert speaker_multiplier("assistant", query_names("Hi Assistant, a plan?"), 1.6, 3.0) == 1.0
    assert "Assistant" not in name_words("assistant") and "Elise" in name_words("elise")
    assert persons_of({"Elise", "user", "Assistant"}) == {"Elise"}


def _two_people() -> MemoryIndex:
    index = MemoryIndex()
    index.add(memory("kate", "I cook pasta with ham and peas", extra={"speaker": "kate"}))
    index.add(memory("elise", "Kate you are the best, Kate!", extra={"speaker": "elise"}))
    index.add(memory("user", "I want the user guide short", extra={"speaker": "user"}))
    index.add(memory("helper", "Sure, a short guide it is", extra={"speaker": "assistant"}))
    return index


def test_a_persons_name_leaves_the_lexical_query_a_roles_stays() -> None:
    index = _two_people()
    kate = search(index, request("What does Kate cook?"), NOW).results
    assert [r.source_event_ids for r in kate] == [["e_kate"]]  # "Kate" alone matches no turn
    assert kate[0].score.speaker_multiplier == DEFAULT.person_multiplier
    user = search(index, request("what does the user want?"), NOW).results
    assert user[0].source_event_ids == ["e_user"]
    assert user[0].score.speaker_multiplier == DEFAULT.speaker_multiplier
    assert user[0].score.lexical_score > 0


class RecordingEmbedder(StaticEmbedder):
    """The shipped static model, keeping the texts it was asked to embed."""

    def __init__(self) -> None:
        super().__init__()
        self.asked: list[str] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        self.asked += [str(t) for t in texts]
        return super().embed(texts)


def test_the_query_vector_leaves_out_the_names_of_the_partitions_speakers() -> None:
    embedder = RecordingEmbedder()
    index = MemoryIndex(embedder)
    index.add(memory("dana", "I moved to Austin in March", extra={"speaker": "Dana Lee"}))
    index.add(memory("sam", "Dana, how was the move?", extra={"speaker": "Sam"}))
    embedder.asked.clear()
    search(index, request("When did Dana move to Austin? Ask Kim's friend"), NOW)
    assert embedder.asked == ["When did move to Austin? Ask Kim's friend"]  # Kim speaks not
    index.remove("dana")
    embedder.asked.clear()
    search(index, request("When did Dana move to Austin?"), NOW)
    assert embedder.asked == ["When did Dana move to Austin?"]  # no live memory of Dana's


def test_names_come_out_of_a_query_with_their_possessive() -> None:
    names = {"Dana", "Sam"}
    assert without_names("What are Dana's pets?", names) == "What are pets?"
    assert without_names("Dana\u2019s and Sam's plans", names) == "and plans"
    assert without_names("Danae and Sampson", names) == "Danae and Sampson"  # whole words
    assert without_names("Dana?", names) == "Dana?"  # nothing else left: the query stays
    assert without_names("hello", set()) == "hello"


def test_a_name_with_accents_is_named_with_or_without_them() -> None:
    assert speaker_multiplier("Zoë", query_names("what did Zoe cook?"), 1.6, 3.0) == 3.0
    assert speaker_multiplier("Zoe", query_names("what did Zoë cook?"), 1.6, 3.0) == 3.0
    assert speaker_multiplier("José Núñez", query_names("Nunez's plans"), 1.6, 3.0) == 3.0
    assert speaker_multiplier("Zoë", query_names("what did Zoey cook?"), 1.6, 3.0) == 1.0
    assert without_names("what did Zoë cook?", {"Zoë", "Zoe"}) == "what did cook?"
