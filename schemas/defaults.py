"""Defaults shared by producers and workers: queue names, bounds, TTLs, the retry policy.

Like ``rq/defaults.py``, this module imports nothing of the project's own: every layer
may read it, and ``turngraph.settings`` takes its defaults from here.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Literal

__all__ = [
    "BATCH_TTL_S", "CHANGES_MAXLEN", "COMPACT_AFTER_DAYS", "COMPACT_MIN_SUMMARIES",
    "COMPACT_SWEEP_EVERY_S", "DISTILL_REPLY_TTL_S", "FAILURE_TTL_S", "INGESTED_TTL_S",
    "INGEST_FUNCTION", "INGEST_QUEUE", "JOB_TIMEOUT_S", "MAINTENANCE_QUEUE", "MAX_QUEUE_LENGTH",
    "PUBLISH_BUFFER_SIZE", "RECALL_LAG_DEGRADED_S", "RECALL_REPLY_TTL_S", "RECAP_BUDGET_TOKENS",
    "REEXTRACT_EVERY_S", "REEXTRACT_PENDING_MAX", "RESULT_TTL_S", "RETRIES", "RETRY_INTERVALS_S",
    "ROLLING_SUMMARY_WORDS", "ROLLING_VERBATIM_TURNS", "SUMMARY_EVERY_N_TURNS", "DropPolicy",
    "EmbeddingProviderName", "GraphEngine",
]  # fmt: skip

INGEST_QUEUE = "turngraph-ingest"
"""RQ queue the producers publish turn events onto."""

INGEST_FUNCTION = "turngraph.workers.ingest.job.ingest_batch"
"""Dotted path of the ingest job function (admission enqueues it, the worker allows it):
one argument, a reference to the batch's stored turns (``{"turns": n, "tenant": t}``) or
a list of TurnEvent JSON dicts."""

MAINTENANCE_QUEUE = "turngraph-maintenance"
"""RQ queue for summaries, compaction, recap, forget and scheduled work."""

GraphEngine = Literal["arcadedb", "neo4j"]
"""The graph servers the project can start: ArcadeDB from its wheel (the default, nothing
to install) or Neo4j 5.26 Community fetched through Maven (needs Java 17+ and Maven)."""

EmbeddingProviderName = Literal["local", "openai", "none"]
"""Recall's embedders: the shipped in-process model, an OpenAI-compatible endpoint, none."""

MAX_QUEUE_LENGTH = 100_000
"""The bound of the ingest queue (jobs waiting); beyond it the drop policy applies."""

JOB_TIMEOUT_S = 120
"""RQ's timeout of one ingest job (and so of the batch the worker claims with it)."""

PUBLISH_BUFFER_SIZE = 10_000
"""Events one producer buffers while Redis is away; beyond it new ones are dropped."""

RECALL_REPLY_TTL_S = 30
"""How long a recall reply waits on its reply key for a client that gave up."""

INGESTED_TTL_S = 7 * 24 * 3600
"""How long an ingested marker lives; graph writes are idempotent beyond it anyway."""

RESULT_TTL_S = 600
"""How long RQ keeps a finished ingest job's hash."""

FAILURE_TTL_S = 7 * 24 * 3600
"""How long RQ keeps a failed ingest job in its failed registry."""

BATCH_TTL_S = FAILURE_TTL_S + 24 * 3600
"""How long a batch job's stored turns live unless the job ran: as long as the job can
fail for good and wait in the failed registry (``turngraph jobs requeue``). A job that
finds its turns gone dead-letters each of them (counted)."""

RETRIES = 8
"""How often RQ retries a job that failed for a transient reason (graph or Redis
restarting, LLM rate-limited); the one retry layer of a job."""

RETRY_INTERVALS_S: tuple[int, ...] = (1, 2, 5, 10, 30, 60, 120, 300)
"""Waits between those retries (RQ's ``Retry(interval=[...])``)."""

CHANGES_MAXLEN = 1_000_000
"""Approximate cap of the change stream; recall replicas bootstrap from the graph anyway."""


class DropPolicy(StrEnum):
    """What the bounded queue does with an event when it is full (always counted)."""

    DROP_NEWEST = "drop_newest"
    """Reject the new event."""
    DROP_OLDEST = "drop_oldest"
    """Evict the oldest queued job (and delete its job hash) to make room."""


REEXTRACT_PENDING_MAX = 100_000
"""Most event ids kept for a later LLM pass; the oldest beyond it are trimmed (logged)."""

SUMMARY_EVERY_N_TURNS = 10
"""A session gets a summary every this many turns (besides semantic triggers)."""

COMPACT_MIN_SUMMARIES = 3
"""A topic's open summaries are compacted into its DecisionRecord at this count..."""

COMPACT_AFTER_DAYS = 7.0
"""...or once the oldest of them is this old (checked by the periodic sweep)."""

COMPACT_SWEEP_EVERY_S = 3_600
"""How often the periodic compaction sweep runs on the maintenance queue."""

REEXTRACT_EVERY_S = 60
"""How often the LLM re-extraction pass runs on the maintenance queue (LLM configured)."""

RECAP_BUDGET_TOKENS = 1_000
"""A session recap's default token budget (``seeds/session-recap.md``)."""

ROLLING_VERBATIM_TURNS = 4
"""Turns a rolling context keeps verbatim (``seeds/conversation-memory-plan.md``)."""

ROLLING_SUMMARY_WORDS = 200
"""Longest rolling summary, in words."""

DISTILL_REPLY_TTL_S = 60
"""How long a reply to an on-demand request waits for a client that gave up."""

RECALL_LAG_DEGRADED_S = 5.0
"""A recall replica further behind the change stream than this flags its answers
``change_stream_lag``."""
