"""Several worker processes write overlapping turns naming the same entities at once."""

from __future__ import annotations

import multiprocessing as mp
import random

import pytest

from tests.support.turns import turn
from turngraph.app import build_pipeline
from turngraph.clients import Clients, build_clients
from turngraph.settings import Settings

pytestmark = pytest.mark.both_engines

FILES = [f"src/core/module_{i}.py" for i in range(6)]
BRANCHES = ["feat/cache", "fix/race"]
PROCESSES = 4
TURNS = 40


def _turns() -> list:
    rng = random.Random(5)
    events = []
    for i in range(TURNS):
        files = rng.sample(FILES, 2)
        events.append(
            turn(
                f"Touching {files[0]} and {files[1]} on branch {rng.choice(BRANCHES)}.",
                i,
                session=f"s{i % 3}",
            )
        )
    return events


def _writer(settings: Settings, seed: int, errors: mp.Queue) -> None:
    try:
        clients = build_clients(settings)
        pipeline = build_pipeline(clients)
        events = _turns()
        random.Random(seed).shuffle(events)  # every process writes every turn, in its own order
        for i in range(0, len(events), 5):
            pipeline.ingest(events[i : i + 5])
        clients.close()
        errors.put(None)
    except Exception as exc:  # reported to the test, which fails on it
        errors.put(repr(exc))


def test_no_duplicates_and_exact_mention_counts(clients: Clients, settings: Settings) -> None:
    build_pipeline(clients)  # schema first, as worker start-up does
    ctx = mp.get_context("spawn")
    errors: mp.Queue = ctx.Queue()
    procs = [
        ctx.Process(target=_writer, args=(settings, seed, errors)) for seed in range(PROCESSES)
    ]
    for proc in procs:
        proc.start()
    outcomes = [errors.get(timeout=240) for _ in procs]
    for proc in procs:
        proc.join(timeout=30)
    assert outcomes == [None] * PROCESSES

    records, _, _ = clients.graph.execute_query(
        "MATCH (n) WHERE n:File OR n:Branch RETURN n.uid AS uid, n.mentions AS mentions, "
        "n.first_episode_id AS first, COUNT { (:Episode)-[:MENTIONS]->(n) } AS links",
        database_=clients.graph_database,
    )
    uids = [r["uid"] for r in records]
    assert len(uids) == len(set(uids)) == len(FILES) + len(BRANCHES)
    expected: dict[str, int] = {}
    for event in _turns():
        for name in FILES + BRANCHES:
            if name in event.content:
                label = "File" if name in FILES else "Branch"
                uid = f"w1|{label}|{name}"
                expected[uid] = expected.get(uid, 0) + 1
    assert {r["uid"]: r["mentions"] for r in records} == expected
    stating, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode)-[:MENTIONS]->(n) WHERE n:File OR n:Branch "
        "RETURN n.uid AS uid, collect(e.event_id) AS eps",
        database_=clients.graph_database,
    )
    eps = {r["uid"]: r["eps"] for r in stating}
    assert all(r["links"] == r["mentions"] == len(set(eps[r["uid"]])) for r in records)
    assert all(r["first"] in eps[r["uid"]] for r in records)  # the turn that made it
    episodes, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
    )
    assert episodes[0]["n"] == TURNS
