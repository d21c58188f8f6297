"""The query's vector is made as a memory's is: after the recent turn of its conversation."""

from __future__ import annotations

import pytest

from tests.support.recall import NOW, memory, request
from turngraph.schemas.recall import ConversationTurn
from turngraph.workers.embeddings.local import StaticEmbedder
from turngraph.workers.embeddings.texts import QUERY_CONTEXT_CHARS, query_text
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT
from turngraph.workers.recall.search import search

CONTEXT = (
    ConversationTurn(
        role="user", content="Planning a winter holiday on the slopes with snowboard lessons."
    ),
)
QUERY = "remind me what you would recommend paying for before it runs out this month"


@pytest.fixture(scope="module")
def local() -> StaticEmbedder:
    return StaticEmbedder()


def _first(local: StaticEmbedder, turns: int, context: tuple[ConversationTurn, ...]) -> str:
    index = MemoryIndex(local, DEFAULT.with_values(query_context_turns=turns))
    index.add(memory("ski", "I adore skiing down snowy mountains every January", session_id="s_1"))
    index.add(
        memory("tax", "The quarterly invoice for the accountant is overdue", session_id="s_2")
    )
    for n in range(30):
        index.add(memory(f"f{n}", f"we ordered lunch number {n} from the corner place"))
    response = search(index, request(QUERY, conversation_context=context), NOW)
    first = response.results[0]
    assert first.score.lexical_score == 0.0  # no shared words: the vector decides
    return first.source_event_ids[0]


def test_a_long_question_is_read_with_the_turn_before_it(local: StaticEmbedder) -> None:
    assert DEFAULT.query_context_turns == 1
    assert _first(local, DEFAULT.query_context_turns, CONTEXT) == "e_ski"
    assert _first(local, 0, CONTEXT) == "e_tax"  # the question alone reads as a bill
    assert _first(local, DEFAULT.query_context_turns, ()) == "e_tax"  # no context, no change


def test_the_query_text_keeps_the_question_whole_and_the_context_short() -> None:
    assert query_text("what now?", []) == "what now?"
    assert query_text("what now?", ["  "]) == "what now?"
    text = query_text("what now?", ["x" * 30_000, "the last turn"])
    assert text.endswith("\nwhat now?") and text.own == "what now?"
    assert text.previous is not None and len(text.previous) == QUERY_CONTEXT_CHARS
    assert text.previous.endswith("the last turn")
