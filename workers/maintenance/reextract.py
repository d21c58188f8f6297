"""The enrichment pass: stored turns asked of the LLM, its answer merged in (issue 36).

Takes turns from the enrichment backlog, reads them back from the graph, asks the LLM
``concurrency`` calls at a time within ``budget_s`` and writes the answers with ingest's
idempotent batch write, an offline entity the LLM types otherwise superseded
(``validation.superseding``). Failures, ``given_up`` and the counters in
:data:`~schemas.keys.REEXTRACT_STATS`: docs/llm.md ("Store first, enrich after").
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import redis
import structlog

from turngraph.schemas.changes import encode_change
from turngraph.schemas.errors import BackendUnavailableError
from turngraph.schemas.keys import REEXTRACT_ATTEMPTS, REEXTRACT_PENDING, REEXTRACT_STATS
from turngraph.schemas.turn_event import TurnEvent
from turngraph.workers.extraction.llm_calls import micro_batches
from turngraph.workers.extraction.models import Extraction
from turngraph.workers.extraction.validation import superseding
from turngraph.workers.ingest.changes import changes_for
from turngraph.workers.maintenance.context import Distiller, LockBusyError, Reextractor

__all__ = [
    "ANSWERED_BUT_UNUSABLE", "MAX_ANSWERED_ATTEMPTS", "MIN_BATCH_S", "NoFallback",
    "ReextractResult", "reextract_pending",
]  # fmt: skip

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
        return asdict(self)


def reextract_pending(distiller: Distiller, reextractor: Reextractor) -> ReextractResult | None:
    """One run of the pass, under a lock (one run at a time across workers); None when
    another worker's run holds it (that run takes the turns)."""
    try:
        with distiller.lock("reextract", timeout_s=reextractor.job_timeout_s, blocking=False):
            return _run(distiller, reextractor)
    except LockBusyError:
        return None


def _run(distiller: Distiller, reextractor: Reextractor) -> ReextractResult:
    conn = distiller.redis
    deadline = time.monotonic() + reextractor.budget_s
    result = ReextractResult()
    seen: set[str] = set()
    while deadline - time.monotonic() >= min(MIN_BATCH_S, reextractor.budget_s / 4):
        try:
            ids = [i for i in reextractor.backlog.take(conn, reextractor.limit) if i not in seen]
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable for the enrichment pass") from exc
        if not ids:
            break
        seen.update(ids)
        if not _run_ids(distiller, reextractor, ids, deadline, result):
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


def _run_ids(
    distiller: Distiller,
    reextractor: Reextractor,
    ids: list[str],
    deadline: float,
    result: ReextractResult,
) -> bool:
    """Enrich the turns of ``ids``, recording each group of calls at once; False when the
    endpoint failed (the run ends)."""
    extractor = reextractor.extractor
    turns = distiller.store.turns_by_event_id(ids)
    found = {t.event_id for t in turns}
    gone = [event_id for event_id in ids if event_id not in found]
    result.missing += len(gone)
    _record(distiller, reextractor, ReextractResult(missing=len(gone)), done=gone, failed=[])
    batches = _batches(turns, extractor.turns_per_call, extractor.batch_max_chars)
    group = max(1, extractor.concurrency)  # calls in flight at once
    for start in range(0, len(batches), group):
        if deadline - time.monotonic() < min(MIN_BATCH_S, reextractor.budget_s / 4):
            return True  # the rest waits for the next run
        batch = [turn for part in batches[start : start + group] for turn in part]
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
            offline = reextractor.offline.extract([t for t, _ in good])
            merged = [
                (t, superseding(x, o, extractor.ontology))
                for (t, x), o in zip(good, offline, strict=True)
            ]
            report = reextractor.store.write(merged)
            distiller.announce([encode_change(change) for change in changes_for(report)])
            step.entities = sum(len(x.entities) for _, x in good)
            step.succeeded = len(good)
        step.given_up = _record(
            distiller,
            reextractor,
            step,
            done=[t.event_id for t, _ in good],
            failed=failed,
            answered=answered,
        )
        for name in ("succeeded", "failed", "entities", "given_up"):
            setattr(result, name, getattr(result, name) + getattr(step, name))
        if failed and not answered:
            return False
    return True


MIN_BATCH_S = 5.0
"""A run starts no batch with less than this (or a quarter of its budget) left."""


def _record(
    distiller: Distiller,
    reextractor: Reextractor,
    step: ReextractResult,
    *,
    done: list[str],
    failed: list[str],
    answered: bool = False,
) -> int:
    """One batch's outcome, at once: done ids leave the backlog, failed ones move behind
    the others (a batch the model cannot answer does not block the rest); when the
    endpoint answered, their attempts are counted and those at the limit are given up.
    Returns how many were given up."""
    conn = distiller.redis
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
        behind = reextractor.backlog.behind_score(conn) if waiting else 0.0
        with conn.pipeline(transaction=False) as pipe:
            if done or given_up:
                pipe.zrem(REEXTRACT_PENDING, *done, *given_up)
                pipe.hdel(REEXTRACT_ATTEMPTS, *done, *given_up)
            if waiting:
                pipe.zadd(REEXTRACT_PENDING, dict.fromkeys(waiting, behind), xx=True)
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
