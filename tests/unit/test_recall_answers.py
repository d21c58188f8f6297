"""The acts recognised at ingest and the answer found for a question turn (answers.py)."""

from __future__ import annotations

import pytest

from tests.support.recall import NOW, memory, request
from turngraph.workers.recall.answers import Act, act_of, asks_what_was_settled, is_question
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import MemoryKind
from turngraph.workers.recall.ranking import DEFAULT
from turngraph.workers.recall.search import search


@pytest.mark.parametrize(
    ("text", "act"),
    [
        ("Agreed: we'll use Postgres 16 for orders.", Act.SETTLES),
        ("Let's go with RabbitMQ then.", Act.SETTLES),
        ("We picked zstd for the nightly export.", Act.SETTLES),
        ("Sounds good, ship it.", Act.SETTLES),
        ("For tests I always want pytest functions, never mocks.", Act.SETTLES),
        ("Never log the request body.", Act.SETTLES),
        ("From now on the changelog goes in CHANGES.md.", Act.SETTLES),
        ("Should we use MySQL or Postgres for the orders database?", Act.QUESTION),
        ("Hi Kate! How was the trip? Did you see the lake?", Act.QUESTION),
        ("I'm a courier and my back hurts every day. What stretches help?", Act.PLAIN),
        ("The cache warms in 3 s.", Act.PLAIN),
        ("Here is the fix. Want me to run the tests?", Act.PLAIN),
    ],
)
def test_acts_come_from_generic_cues(text: str, act: Act) -> None:
    assert act_of(memory("m", text)) is act


def test_a_decision_record_settles_and_a_summary_retells() -> None:
    assert act_of(memory("d", "use zstd", kind=MemoryKind.DECISION_RECORD)) is Act.SETTLES
    assert act_of(memory("s", "Should we? Agreed.", kind=MemoryKind.SUMMARY)) is Act.PLAIN


def test_question_shaped_queries() -> None:
    assert is_question("which database did we pick for orders?")
    assert is_question("how does the user want tests written")
    assert not is_question("orders database")
    assert asks_what_was_settled("which database did we pick for orders?")
    assert not asks_what_was_settled("when does the cache warm?")


def _session(index: MemoryIndex, texts: list[tuple[str, str]]) -> None:
    for n, (role, text) in enumerate(texts):
        index.add(memory(f"t{n}", text, turn_index=n, extra={"role": role}))


def test_an_open_question_has_no_answer_and_a_settled_one_has_its_decision() -> None:
    index = MemoryIndex(ranking=DEFAULT)
    _session(
        index,
        [
            ("user", "Should the exporter compress with gzip or zstd?"),
            ("assistant", "zstd is faster at the same ratio."),
            ("user", "Agreed, zstd level 3."),
            ("user", "Which region should the backups live in?"),
        ],
    )
    question, decision, open_question = (index._ids[k] for k in ("t0", "t2", "t3"))
    assert index.answer_of(question, DEFAULT.answer_reach) == decision
    assert index.answer_of(open_question, DEFAULT.answer_reach) is None


def test_a_question_comes_only_below_its_reply() -> None:
    index = MemoryIndex(ranking=DEFAULT)
    _session(
        index,
        [
            ("user", "Which port does the metrics endpoint listen on?"),
            ("assistant", "9464, the OpenTelemetry default."),
        ],
    )
    results = search(index, request("which port does the metrics endpoint listen on?"), NOW)
    texts = [r.text for r in results.results]
    assert texts[0] == "9464, the OpenTelemetry default."
    assert texts[1].startswith("Which port")
    assert results.results[0].score.semantic_score == results.results[1].score.semantic_score


def test_a_question_and_its_reply_both_scored_zero_do_not_break_the_search() -> None:
    """A tuning run may weigh every signal that found them at 0 (``--set
    lexical_weight=0,chain_weight=0``): the question and its reply then both score 0, and
    placing the question below its reply divided by its zero score."""
    ranking = DEFAULT.with_values(lexical_weight=0, chain_weight=0)
    index = MemoryIndex(ranking=ranking)
    _session(
        index,
        [
            ("user", "Which port does the metrics endpoint listen on?"),
            ("assistant", "9464, the OpenTelemetry default."),
        ],
    )
    results = search(index, request("which port does the metrics endpoint listen on?"), NOW)
    assert results.success
    assert all(r.score.final_score == 0 for r in results.results)
    assert results.result_count >= 1
