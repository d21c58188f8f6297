"""``turngraph jobs failed|requeue|purge`` on real Redis: ids, reasons, never chat text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import redis

from tests.support.pipelines import admission, admit_and_work, fake_graph_pipeline, ingest_worker
from tests.support.rq_keys import RQ_QUEUE_PREFIX
from tests.support.turns import turn
from turngraph.cli import main
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.settings import Settings

pytestmark = pytest.mark.integration

SECRET_TEXT = "the chat text of a turn nobody may print"


@pytest.fixture
def cli(settings: Settings, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Settings:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TURNGRAPH_REDIS_URL", str(settings.redis_url))
    monkeypatch.setenv("TURNGRAPH_GRAPH_URI", str(settings.graph_uri))
    return settings


def _reply(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, object]]:
    capsys.readouterr()  # what workers logged before
    code = main(list(argv))
    return code, json.loads(capsys.readouterr().out)


def test_failed_requeue_purge(
    cli: Settings, redis_conn: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    good = turn(f"{SECRET_TEXT} good", 0)
    bad = turn(f"{SECRET_TEXT} bad", 1).model_dump(mode="json")
    bad["turn_index"] = -1  # does not validate
    queue = BoundedQueue(redis_conn, name=cli.ingest_queue, max_length=10)
    queue.enqueue(good)
    redis_conn.hset(
        "rq:job:forged1",
        mapping={"data": "not json", "status": "queued", "origin": cli.ingest_queue},
    )  # on its own queue: what is wrong with it is its data
    redis_conn.rpush(RQ_QUEUE_PREFIX + cli.ingest_queue, "forged1", "bad id")
    admit_and_work(
        admission(redis_conn, cli),
        ingest_worker(redis_conn, cli, fake_graph_pipeline(redis_conn, cli)),
    )

    code, reply = _reply(capsys, "jobs", "failed", "--json")
    assert code == 0
    jobs = {job["job_id"]: job for job in reply["jobs"]}  # type: ignore[attr-defined]
    assert set(jobs) == {"forged1", "bad id"}
    assert jobs["forged1"]["field"] == "data" and jobs["bad id"]["field"] == "id"
    assert SECRET_TEXT not in json.dumps(reply)

    capsys.readouterr()
    assert main(["jobs", "failed"]) == 0
    human = capsys.readouterr().out
    assert "2 failed job(s)" in human and SECRET_TEXT not in human

    # an unreadable job cannot be requeued: a typed refusal naming the field
    code, reply = _reply(capsys, "jobs", "requeue", "forged1", "--json")
    assert code == 1 and reply["refused"] == [
        {"job_id": "forged1", "field": "data", "reason": "not JSON job data"}
    ]

    code, reply = _reply(capsys, "jobs", "purge", "--json")
    assert code == 0 and reply["purged"] == 2
    code, reply = _reply(capsys, "jobs", "failed", "--json")
    assert reply["jobs"] == []


def test_a_poison_turn_requeued_after_a_fix_goes_in(
    cli: Settings, redis_conn: redis.Redis, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.integration.test_hostile_jobs import PoisonStore
    from tests.support.pipelines import episodes

    event = turn("a turn the graph refused once", 0)
    BoundedQueue(redis_conn, name=cli.ingest_queue, max_length=10).enqueue(event)
    store = PoisonStore({event.event_id})
    worker = ingest_worker(redis_conn, cli, fake_graph_pipeline(redis_conn, cli, store))
    admit_and_work(admission(redis_conn, cli), worker)
    code, reply = _reply(capsys, "jobs", "failed", "--json")
    assert [job["job_id"] for job in reply["jobs"]] == [event.event_id]  # type: ignore[attr-defined]

    store.poison.clear()  # "the fix"
    code, reply = _reply(capsys, "jobs", "requeue", "--all", "--json")
    assert code == 0 and reply["requeued"] == [event.event_id]
    worker = ingest_worker(redis_conn, cli, fake_graph_pipeline(redis_conn, cli, store))
    worker.work(burst=True, with_scheduler=False)
    assert episodes(store) == {event.event_id}
    code, reply = _reply(capsys, "jobs", "failed", "--json")
    assert reply["jobs"] == []
