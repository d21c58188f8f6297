"""One fact, one place in what a prompt is given (``schemas/memory_block.py``; issue 34:
a decision's text appeared 7 times in one request's two memory blocks)."""

from __future__ import annotations

import re
from datetime import timedelta

from hypothesis import given
from hypothesis import strategies as st

from tests.unit.test_distill_summaries import T0, _summary
from turngraph.schemas.memory_block import _LABEL, Said, normalised, render_memory_block
from turngraph.schemas.recall import RecallResult, ScoreBreakdown
from turngraph.schemas.summaries import SummaryContent
from turngraph.workers.extraction.prose import find_prose_statements
from turngraph.workers.maintenance.memories import summary_digest

DECISION = (
    "We store money as integer cents, never as float, and we do not use MongoDB, because "
    "the ledger needs exact sums and transactions."
)


def _result(text: str, ids: tuple[str, ...], kind: str = "episode") -> RecallResult:
    return RecallResult(
        text=text,
        kind=kind,
        created_at=(T0 + timedelta(days=1)).isoformat(),
        scope="workspace",
        score=ScoreBreakdown(
            final_score=1, semantic_score=1, recency_multiplier=1, status_multiplier=1
        ),
        tokens=len(text) // 4,
        source_event_ids=list(ids),
    )


def test_a_fact_is_rendered_once_whatever_its_form() -> None:
    results = [
        _result(DECISION, ("e1",)),
        _result("Agreed: " + DECISION, ("e2",)),  # the assistant's agreement
        _result("Preference: never as float, and we do not use MongoDB", ("e1",), "promoted"),
        _result(
            "Summary · Money: how to store amounts.\nDecided: integer cents.",
            ("e1", "e2", "e3"),
            "summary",
        ),
        _result("The invoice exporter writes semicolon separated files.", ("e9",)),
    ]
    block = render_memory_block(results)
    assert block.count("integer cents") == 1 and block.count("[") == 2
    assert "semicolon separated" in block


def test_what_a_session_was_given_is_not_given_again() -> None:
    said = Said()
    said.add("Recap: Last request: " + DECISION[:90].rsplit(" ", 1)[0] + "…")
    assert said.repeats("Preference: " + DECISION)  # a request cut short still holds it
    assert not said.repeats("The invoice exporter writes semicolon separated files.")
    assert render_memory_block([_result(DECISION, ("e1",))], said) == ""
    said.add("a promoted memory", ("e5",), "promoted")
    assert not said.repeats("another statement of the same turn", ("e5",), "promoted")
    assert said.repeats("a decision record of it", ("e5", "e6"), "decision_record")


def test_labels_do_not_hide_a_repeat() -> None:
    assert normalised("Agreed: We store money!") == normalised("Preference: we store money")
    assert normalised("[2] Decided: x-y") == "x y"


def test_a_preference_said_in_a_clause_keeps_its_sentence() -> None:
    [found] = find_prose_statements("Fine. " + DECISION)
    assert found.type == "Preference" and found.text == DECISION.rstrip(".")
    [plain] = find_prose_statements("please never log request bodies")
    assert plain.text == "never log request bodies"


def test_a_summarys_why_that_repeats_its_decision_is_left_out() -> None:
    content = SummaryContent(
        topic="Money",
        context=("How to store amounts",),
        decisions=(DECISION,),
        rationale=(DECISION,),
    )
    digest = summary_digest(_summary(1, content, 0))
    assert digest.count("integer cents") == 1 and "Why:" not in digest


@given(
    st.lists(
        st.sampled_from(
            ["Decided:", "agreed", " ", "\n", ".", "…", "Why", ": ", "- ", "[2] ", "É", "a1"]
        ),
        max_size=12,
    ).map("".join)
    | st.text(max_size=40)
)
def test_normalised_is_the_words_after_the_leading_labels(text: str) -> None:
    """The words of the text with its leading labels dropped, lower case, one space apart
    (the regular-expression substitutions it replaced, for speed, say the same)."""
    expected = re.sub(r"[^0-9a-z]+", " ", _LABEL.sub("", text).lower()).strip()
    assert normalised(text) == expected


def test_a_text_rendered_again_is_not_normalised_again() -> None:
    """A replica renders the same memories again and again: their normalised text and
    sentences are kept (``TEXT_CACHE``), the block is the same."""
    results = [
        _result(f"{DECISION} Asked again in round {n}. Still the same decision.", (f"e{n}",))
        for n in range(3)
    ]
    first = render_memory_block(results)
    misses = normalised.cache_info().misses
    assert render_memory_block(results) == first
    assert normalised.cache_info().misses == misses
