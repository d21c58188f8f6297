"""What an ingested batch asks of the maintenance queue."""

from __future__ import annotations

import json

from tests.support.turns import turn
from turngraph.workers.extraction.models import ExtractedEntity, Extraction
from turngraph.workers.maintenance.context import DistillOptions
from turngraph.workers.maintenance.triggers import plan_jobs, summary_due


def _extraction(event_id: str, *entities: ExtractedEntity) -> Extraction:
    return Extraction(event_id=event_id, entities=list(entities))


def test_summary_triggers() -> None:
    plain = turn("just chatting", 3)
    assert summary_due(plain, _extraction(plain.event_id), 10) is None
    tenth = turn("still chatting", 9)
    assert summary_due(tenth, _extraction(tenth.event_id), 10) == "every_n_turns"
    decided = turn("we decided to use RQ", 4)
    decision = ExtractedEntity(type="Decision", name="use RQ")
    assert summary_due(decided, _extraction(decided.event_id, decision), 10) == "semantic"
    post = turn("Postmortem: the cache fell over", 5)
    assert summary_due(post, _extraction(post.event_id), 0) == "postmortem"
    assert summary_due(tenth, _extraction(tenth.event_id), 0) is None


def test_plan_jobs_per_batch() -> None:
    directive = ExtractedEntity(
        type="Preference", name="short answers", attributes={"origin": "directive"}
    )
    batch = [
        (turn("hello", 0, session="a"), _extraction("x")),
        (turn("preference: short answers", 1, session="a"), _extraction("y", directive)),
        (turn("more", 9, session="b"), _extraction("z")),
    ]
    quiet = plan_jobs(batch, DistillOptions())
    names = sorted(job.func.__name__ for job in quiet)
    assert names == ["ownership_job", "rolling_context_job", "rolling_context_job",
                     "summarize_session_job"]  # fmt: skip
    summarize = next(job for job in quiet if job.func.__name__ == "summarize_session_job")
    assert summarize.target == {"session_id": "b", "through_turn": 9}
    # every argument carries its scope key (forget finds queued jobs by it)
    assert all("session_id" in job.target for job in quiet)
    assert all(not job.keep_result for job in quiet if "rolling" in job.job_id)
    opted_in = plan_jobs(batch, DistillOptions(auto_promote=True))
    promote = [job for job in opted_in if job.func.__name__ == "promote_turn_job"]
    assert [job.target for job in promote] == [{"session_id": "a", "turn_index": 1}]
    assert plan_jobs(batch, DistillOptions()) == quiet  # deterministic ids
    json.dumps([job.target for job in opted_in])  # JSON job arguments
