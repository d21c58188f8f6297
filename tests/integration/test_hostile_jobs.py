"""No input crashes an ingest worker: every broken envelope and every poison turn, inside a
batch of good turns, is dead-lettered once with its reason while the good turns get in,
in the first round. Real Redis; the in-memory graph store, except where Bolt is the point.
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import pytest
import redis
from rq.job import Job
from rq.serializers import JSONSerializer

from tests.support.memory_graph import InMemoryGraphStore
from tests.support.pipelines import (
    admission,
    admit_and_work,
    episodes,
    fake_graph_pipeline,
    ingest_worker,
    memory_store,
)
from tests.support.rq_keys import RQ_QUEUE_PREFIX
from tests.support.turns import turn
from turngraph.app import ingest_burst, ingest_queue
from turngraph.clients import Clients
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.schemas.defaults import INGEST_FUNCTION
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.settings import Settings
from turngraph.workers.batch_store import job_turns
from turngraph.workers.graph.store import Batch, WriteReport
from turngraph.workers.ingest import dead_letters

pytestmark = pytest.mark.integration

GOOD = [turn(f"step {i}: edit src/mod{i}.py", i, session="hostile") for i in range(6)]


def _batch_data(turns: list[dict[str, Any]]) -> bytes:
    """RQ's JSON job data of an ingest batch job."""
    return json.dumps([INGEST_FUNCTION, None, [turns], {}]).encode()


def _hash(data: bytes | None = None, **over: Any) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "status": "queued",
        "data": data
        if data is not None
        else json.dumps(
            [INGEST_FUNCTION, None, [[turn("bad one", 99).model_dump(mode="json")]], {}]
        ).encode(),
        "origin": "turngraph-ingest",
        "description": "ingest_turn(x)",
        "created_at": "2026-11-21T05:00:00.000000Z",
        "enqueued_at": "2026-11-21T05:00:00.000000Z",
        "timeout": "120",
        "result_ttl": "600",
        "failure_ttl": "600",
        "retries_left": "8",
        "retry_intervals": "[1, 2]",
    }
    fields.update(over)
    return {k: v for k, v in fields.items() if v is not None}


POISON_ID = turn("poison", 98, session="hostile").event_id


def _payload_data(**over: Any) -> bytes:
    payload = turn("poison", 98, session="hostile").model_dump(mode="json")
    raw = json.dumps(payload)
    for key, value in over.items():
        raw = raw.replace(f'"{key}": {json.dumps(payload[key])}', f'"{key}": {value}')
    return b'["' + INGEST_FUNCTION.encode() + b'", null, [[' + raw.encode() + b"]], {}]"


# kind -> (job id, job hash or None, the field the dead letter must name)
BROKEN: dict[str, tuple[str, dict[str, Any] | None, str]] = {
    "id_glob": ("bad*?[1", _hash(), "id"),
    "id_space": ("bad 1", _hash(), "id"),
    "id_crlf": ("bad\r\n1", _hash(), "id"),
    "no_hash": ("bad1", None, "job"),
    "no_data": ("bad1", _hash(data=b"", status="queued"), "data"),
    "not_json": ("bad1", _hash(data=b"{not json"), "data"),
    "bad_zlib": ("bad1", _hash(data=b"\x78\x9c not zlib at all"), "data"),
    "zlib_not_json": ("bad1", _hash(data=zlib.compress(b"[1, 2")), "data"),
    "bad_timeout": ("bad1", _hash(timeout="soon"), "job"),  # RQ cannot restore it
    "bad_created_at": ("bad1", _hash(created_at="yesterday"), "job"),
    "bad_retries_left": ("bad1", _hash(retries_left="many"), "job"),
    "bad_status": ("bad1", _hash(status="dancing"), "job"),
    "other_function": ("bad1", _hash(data=b'["os.system", null, ["true"], {}]'), "data.function"),
    "two_args": (
        "bad1",
        _hash(data=json.dumps([INGEST_FUNCTION, None, [{}, {}], {}]).encode()),
        "data.args",
    ),
    "zero_timeout": ("bad1", _hash(timeout="0"), "timeout"),
    "intervals_not_a_list": ("bad1", _hash(retry_intervals="5"), "retry_intervals"),
    "dependency_ids_number": ("bad1", _hash(dependency_ids="5"), "dependency_ids"),
    "callback": ("bad1", _hash(failure_callback_name="os.abort"), "failure_callback_name"),
    "turn_index_1e999": ("bad1", _hash(data=_payload_data(turn_index="1e999")), "turn_index"),
    "turn_index_infinity": ("bad1", _hash(data=_payload_data(turn_index="Infinity")), "turn_index"),
    # issue 26, item 6: gaps between the dequeued and the claimed path
    "id_3000": ("a" * 3000, _hash(), "id"),
    "data_field_absent": ("bad1", {k: v for k, v in _hash().items() if k != "data"}, "data"),
    "occurred_at_overflow": (
        "bad1",
        _hash(data=_payload_data(occurred_at='"0001-01-01T00:30:00+05:00"')),
        "occurred_at",
    ),
}


def _queue_with_a_broken_job(conn: redis.Redis, settings: Settings, kind: str, first: bool) -> str:
    """A broken job hash pushed onto RQ's queue before or after the good turns' batch job."""
    job_id, fields, _ = BROKEN[kind]
    BoundedQueue(conn, name=settings.ingest_queue, max_length=100).enqueue_many(GOOD)
    if not first:
        admission(conn, settings).admit_all()
    if fields is not None:
        conn.hset(f"rq:job:{job_id}", mapping=fields)
    conn.rpush(RQ_QUEUE_PREFIX + settings.ingest_queue, job_id)
    return job_id


CASES = [(kind, position) for kind in sorted(BROKEN) for position in ("first", "behind")]


@pytest.mark.parametrize(("kind", "position"), CASES)
def test_a_broken_job_is_dead_lettered_and_the_batch_goes_in(
    redis_conn: redis.Redis, settings: Settings, kind: str, position: str
) -> None:
    job_id = _queue_with_a_broken_job(redis_conn, settings, kind, first=position == "first")
    store = memory_store()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings), worker)  # returns: no crash
    assert episodes(store) == {e.event_id for e in GOOD}  # all good turns, first round
    letters = [job for job in dead_letters.failed_jobs(redis_conn, settings.ingest_queue)]
    # a readable batch job with an invalid turn: that turn is the dead letter, by its id
    assert [job.job_id for job in letters] in ([job_id], [POISON_ID])
    assert BROKEN[kind][2] in letters[0].field
    assert "poison" not in json.dumps([vars(j) for j in letters])  # never the turn's text
    assert redis_conn.llen(RQ_QUEUE_PREFIX + settings.ingest_queue + ":intermediate") == 0
    assert redis_conn.llen(RQ_QUEUE_PREFIX + settings.ingest_queue) == 0


class PoisonStore(InMemoryGraphStore):
    """Refuses, as one transaction, any batch holding a poison turn (a turn the graph
    cannot take for a reason validation does not know)."""

    def __init__(self, poison: set[str]) -> None:
        base = memory_store()
        super().__init__(entity_labels=base.entity_labels, relation_types=base.relation_types)
        self.poison = poison
        self.writes = 0

    def write(self, batch: Batch) -> WriteReport:
        self.writes += 1
        if any(event.event_id in self.poison for event, _ in batch):
            raise ValueError("the graph refused a property")
        return super().write(batch)


@pytest.mark.parametrize("poison_index", [0, 2, 5])
def test_a_poison_turn_is_isolated_and_costs_no_innocent_one(
    redis_conn: redis.Redis, settings: Settings, poison_index: int
) -> None:
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=100).enqueue_many(GOOD)
    poison = GOOD[poison_index].event_id
    store = PoisonStore({poison})
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admit_and_work(admission(redis_conn, settings), worker)
    assert episodes(store) == {e.event_id for e in GOOD} - {poison}
    letters = dead_letters.failed_jobs(redis_conn, settings.ingest_queue)
    assert [(job.job_id, job.error) for job in letters] == [(poison, "PoisonTurnError")]
    assert store.writes <= 1 + 2 * 4  # bisection: about 2 log2(6) writes
    stats = redis_conn.hget(f"turngraph:queue:{settings.ingest_queue}:stats", "dead_lettered")
    assert stats == b"1"  # dead-lettered once


class AwayStore(InMemoryGraphStore):
    def __init__(self) -> None:
        base = memory_store()
        super().__init__(entity_labels=base.entity_labels, relation_types=base.relation_types)

    def write(self, batch: Batch) -> WriteReport:
        raise BackendUnavailableError("graph restarting")


def test_a_transient_failure_dead_letters_nothing_and_gives_the_batch_back(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    BoundedQueue(redis_conn, name=settings.ingest_queue, max_length=100).enqueue_many(GOOD)
    store = AwayStore()
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings, store))
    admission(redis_conn, settings).admit_all()
    worker.work(burst=True, with_scheduler=False, max_jobs=1)
    assert dead_letters.failed_jobs(redis_conn, settings.ingest_queue) == []
    (job_id,) = worker.queues[0].scheduled_job_registry.get_job_ids()  # RQ's back-off
    job = Job.fetch(job_id, connection=redis_conn, serializer=JSONSerializer)
    turns = job_turns(redis_conn, job)
    assert [t["event_id"] for t in turns] == [e.event_id for e in GOOD]  # whole batch


def test_on_the_real_graph_a_poison_payload_among_good_ones(clients: Clients) -> None:
    conn, settings = clients.redis, clients.settings
    _queue_with_a_broken_job(conn, settings, "occurred_at_overflow", first=False)
    ingest_burst(clients)
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.event_id AS id", database_=clients.graph_database
    )
    assert {r["id"] for r in records} == {e.event_id for e in GOOD}
    (letter,) = dead_letters.failed_jobs(conn, settings.ingest_queue)
    assert letter.job_id == POISON_ID and "occurred_at" in letter.field
    assert ingest_queue(clients).count == 0


def test_ids_rq_skipped_are_dead_lettered_before_rqs_own_cleaning(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    """RQ moves an id to its intermediate list and skips it without a word when it has no
    job hash or no data; its own cleaning then drops it silently. A long-running worker's
    maintenance dead-letters both first, and leaves no data-less hash behind as queued."""
    queue = settings.ingest_queue
    intermediate = RQ_QUEUE_PREFIX + queue + ":intermediate"
    redis_conn.hset("rq:job:nodata", mapping={k: v for k, v in _hash().items() if k != "data"})
    redis_conn.rpush(intermediate, "nohash", "nodata")
    worker = ingest_worker(redis_conn, settings, fake_graph_pipeline(redis_conn, settings))
    worker.run_maintenance_tasks()
    letters = dead_letters.failed_jobs(redis_conn, queue)
    assert sorted((j.job_id, j.field) for j in letters) == [("nodata", "data"), ("nohash", "job")]
    assert redis_conn.llen(intermediate) == 0
    assert not redis_conn.exists("rq:job:nodata")
    worker.run_maintenance_tasks()  # exactly one dead letter each
    assert len(dead_letters.failed_jobs(redis_conn, queue)) == 2
