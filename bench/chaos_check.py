"""The chaos bench's verdict: per event, what the graph and Redis hold after the drain.

Counted so that each check can fail: Episodes are counted by ``event_id`` from the nodes
themselves (not trusting the unique key), each Episode must have exactly one
``IN_SESSION``, the ingested marker counts the writes that *created* the episode (2 means
it was written twice), and every entity's ``mentions`` must equal the number of distinct
episodes with a ``MENTIONS`` to it and its ``MENTIONS`` relationships, and name the turn
that made it (``first_episode_id``) among them.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import neo4j
import redis
from rq import Queue
from rq.job import Job
from rq.serializers import JSONSerializer

from turngraph.producers.bounded_queue import ingested_key
from turngraph.schemas.keys import (
    DEAD_LETTERS_TEMPLATE,
    INBOX_TEMPLATE,
    operator_admission_list,
)
from turngraph.workers.batch_store import job_turns


@dataclass(frozen=True)
class Backlog:
    """Where a turn or its batch job can wait or hang in Redis; all zero once drained.
    ``queued`` counts turns in the inbox, ``claimed`` turns an admitter holds, the others
    batch jobs (RQ's queue as ``batches``) or dead letters."""

    queued: int
    claimed: int
    batches: int
    started: int
    intermediate: int
    scheduled: int
    dead_letters: int
    failed: int

    @property
    def total(self) -> int:
        return (
            self.queued
            + self.claimed
            + self.batches
            + self.started
            + self.intermediate
            + self.scheduled
            + self.dead_letters
            + self.failed
        )


def backlog(conn: redis.Redis, queue: str) -> Backlog:
    """Every place a turn can be left in (ours, then RQ's through its queue and
    registries)."""
    rq_queue = Queue(queue, connection=conn)
    with conn.pipeline(transaction=False) as pipe:
        pipe.llen(INBOX_TEMPLATE.format(queue=queue))
        pipe.llen(operator_admission_list(queue))
        pipe.hlen(DEAD_LETTERS_TEMPLATE.format(queue=queue))
        inbox, admission, letters = (int(v) for v in pipe.execute())
    return Backlog(
        inbox,
        admission,
        rq_queue.count,
        rq_queue.started_job_registry.get_job_count(cleanup=False),
        len(rq_queue.intermediate_queue.get_job_ids()),
        rq_queue.scheduled_job_registry.get_job_count(cleanup=False),
        letters,
        rq_queue.failed_job_registry.get_job_count(cleanup=False),
    )


def markers(conn: redis.Redis, event_ids: Sequence[str]) -> dict[str, int]:
    """Each event's ingested marker: how many writes created its episode (0: none)."""
    out: dict[str, int] = {}
    for start in range(0, len(event_ids), 1000):
        chunk = event_ids[start : start + 1000]
        values = conn.mget([ingested_key(e) for e in chunk])
        out.update({e: int(v) if v else 0 for e, v in zip(chunk, values, strict=True)})
    return out


def job_hashes_left(conn: redis.Redis, event_ids: Iterable[str], queue: str) -> set[str]:
    """Those of ``event_ids`` Redis still holds, in the inbox, an admission list or a batch
    job waiting, scheduled or running (not lost: not drained yet)."""
    wanted = set(event_ids)
    rq_queue = Queue(queue, connection=conn, serializer=JSONSerializer)
    found: set[str] = set()
    admitting = operator_admission_list(queue)
    for key in (INBOX_TEMPLATE.format(queue=queue), admitting):
        entries: Any = conn.lrange(key, 0, -1)
        found.update(str(json.loads(raw).get("event_id")) for raw in entries)
    job_ids = [
        *rq_queue.job_ids,
        *rq_queue.scheduled_job_registry.get_job_ids(),
        *rq_queue.started_job_registry.get_job_ids(),
    ]
    for job in Job.fetch_many(job_ids, connection=conn, serializer=JSONSerializer):
        if job is not None:
            turns = job_turns(conn, job)
            found.update(str(turn.get("event_id")) for turn in turns if isinstance(turn, dict))
    return wanted & found


@dataclass
class GraphCounts:
    episodes: Counter[str] = field(default_factory=Counter)
    """Episode nodes per event_id (the nodes counted, not the unique key trusted)."""
    in_session: Counter[str] = field(default_factory=Counter)
    mention_errors: list[str] = field(default_factory=list)
    """Entity uids whose mention count disagrees with the episodes mentioning them."""
    entities: int = 0


def _rows(driver: neo4j.Driver, database: str, query: str) -> list[Any]:
    records, _, _ = driver.execute_query(query, database_=database)
    return list(records)


def graph_counts(driver: neo4j.Driver, database: str) -> GraphCounts:
    counts = GraphCounts()
    for rec in _rows(driver, database, "MATCH (e:Episode) RETURN e.event_id AS id"):
        counts.episodes[rec["id"]] += 1
    query = "MATCH (e:Episode)-[:IN_SESSION]->(s) RETURN e.event_id AS id"
    for rec in _rows(driver, database, query):
        counts.in_session[rec["id"]] += 1
    mentioned: dict[str, list[str]] = defaultdict(list)
    query = "MATCH (e:Episode)-[:MENTIONS]->(n) RETURN n.uid AS uid, e.event_id AS id"
    for rec in _rows(driver, database, query):
        mentioned[rec["uid"]].append(rec["id"])
    query = (
        "MATCH (n) WHERE n.mentions IS NOT NULL "
        "RETURN n.uid AS uid, n.mentions AS mentions, n.first_episode_id AS first_episode_id"
    )
    entities = [dict(rec) for rec in _rows(driver, database, query)]
    counts.entities = len(entities)
    counts.mention_errors = mention_errors(entities, mentioned)
    return counts


def mention_errors(
    entities: Iterable[dict[str, Any]], mentioned: dict[str, list[str]]
) -> list[str]:
    """Uids of entities whose ``mentions`` is not the number of distinct episodes with a
    ``MENTIONS`` to them, whose ``MENTIONS`` repeat an episode, or whose first turn is not
    one of them (the chaos run retracts no mention, so the turn that made it still does)."""
    errors = []
    for entity in entities:
        links = mentioned.get(entity["uid"], [])
        distinct = len(set(links))
        first_among = entity["first_episode_id"] in links
        if not (entity["mentions"] == distinct == len(links) and first_among):
            errors.append(str(entity["uid"]))
    return errors


@dataclass(frozen=True)
class Verdict:
    accepted: int
    in_graph: int
    lost: int
    lost_by_redis: int
    """Accepted events Redis no longer knew of after its SIGKILL (no job hash, no marker)."""
    duplicated: int
    written_twice: int
    """Events whose marker says two writes created their episode."""
    mention_errors: int
    unknown: int
    entities: int


def verdict(
    accepted: Sequence[str], counts: GraphCounts, marks: dict[str, int], hashes_left: set[str]
) -> Verdict:
    """``hashes_left``: accepted events not in the graph whose job hash Redis still has."""
    accepted_set = set(accepted)
    missing = [e for e in accepted if counts.episodes[e] == 0]
    forgotten = [e for e in missing if e not in hashes_left and marks.get(e, 0) == 0]
    twice = {e for e in accepted if marks.get(e, 0) >= 2}
    duplicated = {
        e for e in accepted if counts.episodes[e] > 1 or counts.in_session[e] > 1 or e in twice
    }
    return Verdict(
        accepted=len(accepted),
        in_graph=sum(1 for e in accepted if counts.episodes[e] >= 1),
        lost=len(missing),
        lost_by_redis=len(forgotten),
        duplicated=len(duplicated),
        written_twice=len(twice),
        mention_errors=len(counts.mention_errors),
        unknown=len(set(counts.episodes) - accepted_set),
        entities=counts.entities,
    )
