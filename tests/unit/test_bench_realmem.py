"""The RealMem replay's evidence mapping and the BM25 reference over what was published
(``bench/retrieval_realmem.py``, ``bench/retrieval_eval.py``), on a tiny file of the
dataset's shape written here (the real data is never copied into the repository)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from bench.retrieval_eval import SameTokenizerBM25, evaluate
from bench.retrieval_realmem import load

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def _session(
    uuid: str, day: str, turns: list[dict[str, object]], memories: list[dict[str, object]]
) -> dict[str, object]:
    return {
        "session_identifier": f"Goal_1:S1_{uuid}",
        "session_uuid": uuid,
        "current_time": f"{day} (Monday)",
        "dialogue_turns": turns,
        "extracted_memory": memories,
    }


def _write(folder: Path) -> None:
    first = [
        {"speaker": "User", "content": "I train for a marathon in April.", "is_query": False},
        {"speaker": "Assistant", "content": "Great, a 16-week plan then.", "is_query": False},
        {"speaker": "User", "content": "My knee hurts after long runs.", "is_query": False},
    ]
    memories = [
        {"index": "m1", "type": "Dynamic", "content": "User trains for an April marathon.",
         "source_turn": 0, "source_content_snapshot": first[0]["content"],
         "source_role_snapshot": "User", "session_uuid": "aaa"},
        {"index": "m2", "type": "Dynamic", "content": "User's knee hurts.", "source_turn": 3,
         "source_content_snapshot": first[2]["content"], "source_role_snapshot": "User",
         "session_uuid": "aaa"},
        {"index": "m3", "type": "Dynamic", "content": "Later fact.", "source_turn": 2,
         "source_content_snapshot": "Anything else?", "source_role_snapshot": "User",
         "session_uuid": "bbb"},
    ]  # fmt: skip
    second = [
        {"speaker": "User", "content": "Back again.", "is_query": False},
        {"speaker": "User", "content": "How should I adapt my long runs for the marathon?",
         "is_query": True, "query_id": "Q-1", "category_name": "Dynamic Incremental",
         "session_type": "multi_session", "topic": "Fitness"},
        {"speaker": "Assistant", "content": "Mind the knee.", "is_query": False,
         "memory_used": [{"session_uuid": "aaa", "content": "User trains for an April marathon."},
                         {"session_uuid": "aaa", "content": "User's knee hurts."},
                         {"session_uuid": "bbb", "content": "Later fact."},
                         {"session_uuid": "aaa", "content": "Not extracted."}],
         "memory_session_uuids": ["aaa", "bbb"]},
        {"speaker": "User", "content": "Anything else?", "is_query": False},
    ]  # fmt: skip
    data = {
        "_metadata": {"person_name": "Test Person"},
        "dialogues": [
            _session("aaa", "2025-12-17", first, memories),
            _session("bbb", "2025-12-16", second, []),  # runs backwards: clamped
        ],
    }
    (folder / "Test_Person_dialogues_256k.json").write_text(json.dumps(data))


def test_evidence_maps_to_turns_published_before_the_question(tmp_path: Path) -> None:
    _write(tmp_path)
    rm = load(now=NOW, folder=tmp_path)
    assert len(rm.turns) == 7 and rm.sessions_clamped == 1
    times = [t.occurred_at for t in rm.turns]
    assert times == sorted(times) and times[-1] < NOW
    (question,) = rm.questions
    assert question["split"] == "test" and question["position"] == 4
    assert question["conversation_context"] == [{"role": "user", "content": "Back again."}]
    # source_turn 0 and 3 (1-based) are the first and third turns of the first session
    assert question["evidence_event_ids"] == [rm.turns[0].event_id, rm.turns[2].event_id]
    assert rm.evidence_total == 4 and rm.evidence_resolved == 3
    assert rm.evidence_unpublished == 1  # the turn after the question

    bm25 = SameTokenizerBM25(rm.turns)
    ranked = bm25.ranker()(question)
    assert rm.turns[4].event_id not in ranked  # the question itself was not published yet
    assert set(ranked[:2]) == set(question["evidence_event_ids"])  # marathon, long runs
    metrics = evaluate(bm25.ranker(), rm.questions, rm.session_of)
    assert metrics["s10"] == 1.0 and metrics["r10"] == 1.0
