"""The committed retrieval dataset is what the generator makes, and fit for purpose."""

from __future__ import annotations

import json
from pathlib import Path

from bench.retrieval_data import DEFAULT_OUT, build, load
from turngraph.workers.recall.text import tokenize

DATA = Path(__file__).resolve().parents[1] / "data" / "retrieval"


def test_committed_files_match_the_generator() -> None:
    turns, questions = build()
    committed = (DATA / "turns.jsonl").read_text().splitlines()
    assert [json.dumps(t, sort_keys=True) for t in turns] == committed
    committed_q = (DATA / "questions.jsonl").read_text().splitlines()
    assert [json.dumps(q, sort_keys=True) for q in questions] == committed_q


def test_dataset_size_and_shape() -> None:
    turns, questions, _ = load(DATA)
    assert DEFAULT_OUT.parts[-2:] == ("data", "retrieval")
    assert len(turns) >= 300
    assert len({t.session_id for t in turns}) >= 10
    assert len({t.workspace for t in turns}) >= 2
    assert len(questions) >= 100
    assert sum(q["follow_up"] for q in questions) >= 20
    ids = {t.event_id: t for t in turns}
    for question in questions:
        assert question["evidence_event_ids"]
        for event_id in question["evidence_event_ids"]:
            assert ids[event_id].workspace == question["workspace"]
        assert bool(question["conversation_context"]) == question["follow_up"]


def test_questions_are_paraphrases_not_copies() -> None:
    turns, questions, _ = load(DATA)
    text = {t.event_id: set(tokenize(t.content)) for t in turns}
    overlaps = []
    for question in questions:
        asked = set(tokenize(question["question"]))
        evidence = question["evidence_event_ids"]
        overlaps.append(max(len(asked & text[e]) / max(len(asked), 1) for e in evidence))
    assert sum(overlaps) / len(overlaps) < 0.35  # measured 0.25: most question terms are new
