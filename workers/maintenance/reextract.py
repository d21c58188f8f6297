"""The LLM re-extraction pass: turns the offline rules stood in for, asked again.

When an LLM batch fails at ingest, the offline rules extract it, the episode is stored and
its event id waits in the sorted set :data:`~schemas.keys.REEXTRACT_PENDING`. This pass,
run periodically on the maintenance queue, takes the oldest pending ids, reads their
(redacted) turns back from the graph, asks the LLM again and writes what it finds with the
same idempotent batch write as ingest: the episode is unchanged (``MERGE ... ON CREATE``),
the LLM's entities and facts are added beside the offline ones, and the recall replicas get
the episode's new entities on the change stream. Written ids leave the pending set; ids
whose turn is gone (a forgotten scope) leave it too, counted as ``missing``.

Each run is bounded (``budget_s``, well inside its job timeout: the run stops starting
batches when its time is up, and a request's timeout is what is left) and records its
results per micro-batch, so a slow model makes progress run after run: the next run
resumes with the turns still pending. An endpoint that still fails ends the run at the
first failed batch (its turns stay pending, counted as ``failed``, moved behind the
others), so a dead endpoint costs one call per run. A batch the endpoint answered with
nothing usable (cut off, unreadable after the re-ask) does not end the run; after
:data:`MAX_ANSWERED_ATTEMPTS` such answers a turn keeps its offline entities and leaves
the pending set, counted as ``given_up`` (a small model would otherwise keep it pending
for ever). Counters live in the hash
:data:`~schemas.keys.REEXTRACT_STATS` (``turngraph queue status``).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, cast

import redis
import structlog

from turngraph.schemas.changes import encode_change
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.schemas.keys import REEXTRACT_ATTEMPTS, REEXTRACT_PENDING, REEXTRACT_STATS
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.llm_calls import micro_batches
from turngraph.workers.extraction.models import Extraction
from turngraph.workers.ingest.changes import changes_for
from turngraph.workers.maintenance.context import Distiller, Reextractor

log = structlog.get_logger(__name__)

MAX_ANSWERED_ATTEMPTS = 3
"""Answers with nothing usable for a turn before it is given up (offline entities kept)."""

ANSWERED_BUT_UNUSABLE = frozenset(
    {"answer_cut_at_token_limit", "unreadable_answer", "turns_missing_from_answer"}
)
"""Fallback reasons that mean the endpoint works but could not answer these turns."""


class NoFallback:
    """The re-extractor's stand-in for the offline rules: an LLM batch that fails again
    gives empty extractions marked ``reextract``, so its turns stay pending (the offline
    entities are already in the graph)."""

    def extract(self, turns: Sequence[TurnEvent]) -> list[Extraction]:
        return [Extraction(event_id=turn.event_id, reextract=True) for turn in turns]


@dataclass
class ReextractResult:
    succeeded: int = 0
    failed: int = 0
    missing: int = 0
    entities: int = 0
    given_up: int = 0
    pending: int = 0
    """What is still pending after the run."""

    def as_counts(self) -> dict[str, int]:
        return {
            "succeeded": self.succeeded,
            "failed": self.failed,
            "missing": self.missing,
            "given_up": self.given_up,
            "entities": self.entities,
            "pending": self.pending,
        }


def reextract_pending(distiller: Distiller, reextractor: Reextractor) -> ReextractResult:
    """One run of the pass (under a lock: one run at a time across workers)."""
    with distiller.lock("reextract", timeout_s=reextractor.job_timeout_s):
        return _run(distiller, reextractor)


def _run(distiller: Distiller, reextractor: Reextractor) -> ReextractResult:
    conn = distiller.redis
    deadline = time.monotonic() + reextractor.budget_s
    result = ReextractResult()
    try:
        raw = conn.zrange(REEXTRACT_PENDING, 0, reextractor.limit - 1)
    except redis.RedisError as exc:
        raise BackendUnavailableError("redis unavailable for the re-extraction pass") from exc
    ids = [r.decode() if isinstance(r, bytes) else str(r) for r in cast(list[Any], raw)]
    if not ids:
        return result
    turns = distiller.store.turns_by_event_id(ids)
    found = {t.event_id for t in turns}
    gone = [event_id for event_id in ids if event_id not in found]
    result.missing = len(gone)
    _record(conn, ReextractResult(missing=len(gone)), done=gone, failed=[], answered=False)
    extractor = reextractor.extractor
    for batch in _batches(turns, extractor.turns_per_call, extractor.batch_max_chars):
        if deadline - time.monotonic() < min(MIN_BATCH_S, reextractor.budget_s / 4):
            break  # the rest waits for the next run
        reasons_before = extractor.stats.reasons()
        extractions = extractor.extract(batch, deadline=deadline)
        reasons = extractor.stats.reasons()
        answered = all(
            name in ANSWERED_BUT_UNUSABLE
            for name, count in reasons.items()
            if count > reasons_before.get(name, 0)
        )
        good = [(t, x) for t, x in zip(batch, extractions, strict=True) if not x.reextract]
        failed = [t.event_id for t, x in zip(batch, extractions, strict=True) if x.reextract]
        step = ReextractResult(failed=len(failed))
        if good:
            report = reextractor.store.write(good)
            distiller.announce([encode_change(change) for change in changes_for(report)])
            step.entities = sum(len(x.entities) for _, x in good)
            step.succeeded = len(good)
        step.given_up = _record(
            conn,
            step,
            done=[t.event_id for t, _ in good],
            failed=failed,
            answered=answered,
        )
        for name in ("succeeded", "failed", "entities", "given_up"):
            setattr(result, name, getattr(result, name) + getattr(step, name))
        if failed and not answered:
            break  # the endpoint still fails: the rest waits for the next run
    try:
        with conn.pipeline(transaction=False) as pipe:
            pipe.hincrby(REEXTRACT_STATS, "runs", 1)
            pipe.zcard(REEXTRACT_PENDING)
            replies = pipe.execute()
    except redis.RedisError as exc:
        raise BackendUnavailableError("redis unavailable after the re-extraction") from exc
    result.pending = int(replies[-1])
    log.info("reextract_run", **result.as_counts())
    return result


MIN_BATCH_S = 5.0
"""A run starts no batch with less than this (or a quarter of its budget) left."""


def _record(
    conn: redis.Redis,
    step: ReextractResult,
    *,
    done: list[str],
    failed: list[str],
    answered: bool,
) -> int:
    """One batch's outcome, at once: done ids leave the pending set, failed ones move
    behind the others (a batch the model cannot answer does not block the rest); when the
    endpoint answered, their attempts are counted and those at the limit are given up.
    Returns how many were given up."""
    try:
        given_up: list[str] = []
        if failed and answered:
            with conn.pipeline(transaction=False) as pipe:
                for event_id in failed:
                    pipe.hincrby(REEXTRACT_ATTEMPTS, event_id, 1)
                attempts = pipe.execute()
            given_up = [
                event_id
                for event_id, count in zip(failed, attempts, strict=True)
                if int(count) >= MAX_ANSWERED_ATTEMPTS
            ]
        waiting = [event_id for event_id in failed if event_id not in given_up]
        with conn.pipeline(transaction=False) as pipe:
            if done or given_up:
                pipe.zrem(REEXTRACT_PENDING, *done, *given_up)
                pipe.hdel(REEXTRACT_ATTEMPTS, *done, *given_up)
            if waiting:
                pipe.zadd(REEXTRACT_PENDING, dict.fromkeys(waiting, time.time()), xx=True)
            counts = {**step.as_counts(), "given_up": len(given_up)}
            for name, value in counts.items():
                if name != "pending" and value:
                    pipe.hincrby(REEXTRACT_STATS, name, value)
            pipe.execute()
    except redis.RedisError as exc:
        # The graph writes are idempotent: the next run repeats them harmlessly.
        raise BackendUnavailableError("redis unavailable after the re-extraction") from exc
    if given_up:
        log.warning("reextract_given_up", turns=len(given_up), attempts=MAX_ANSWERED_ATTEMPTS)
    return len(given_up)


def _batches(turns: list[TurnEvent], max_turns: int, max_chars: int) -> list[list[TurnEvent]]:
    """Micro-batches within each session, so each is one LLM call recorded on its own."""
    return [
        batch
        for session_turns in _by_session(turns)
        for batch in micro_batches(session_turns, max_turns, max_chars)
    ]


def _by_session(turns: list[TurnEvent]) -> list[list[TurnEvent]]:
    groups: dict[str, list[TurnEvent]] = {}
    for turn in turns:
        groups.setdefault(turn.session_id, []).append(turn)
    return list(groups.values())
