"""The Redis key layout: every key or key prefix one process writes and another reads.

RQ's own key names are not here: RQ's objects know them (``Queue.key``, ``Job.key_for``).
"""

from __future__ import annotations

__all__ = [
    "ADMISSION_LISTS", "ADMISSION_LIST_TEMPLATE", "ADMITTED_TEMPLATE", "BATCH_TEMPLATE",
    "CHANGES_STREAM", "DEAD_LETTERS_TEMPLATE", "DISTILL_REPLY_PREFIX", "DISTILL_REQUESTS",
    "ENRICH_REQUESTED", "FORGET_EPOCH", "GRAPH_IDENTITY", "INBOX_TEMPLATE", "INBOX_WAKE_TEMPLATE",
    "INGESTED_PREFIX", "LLM_MODE_PREFIX", "LLM_STATS", "LOCK_PREFIX", "QUEUE_STATS_TEMPLATE",
    "RECALL_REPLICA_PREFIX", "RECALL_REPLY_PREFIX", "RECALL_REQUESTS", "REEXTRACT_ATTEMPTS",
    "REEXTRACT_PENDING", "REEXTRACT_STATS", "ROLLING_CONTEXT_PREFIX", "TOMBSTONE_PREFIX",
    "admission_lists", "operator_admission_list", "tenant_admission_list",
]  # fmt: skip

QUEUE_STATS_TEMPLATE = "turngraph:queue:{queue}:stats"
"""Hash of a queue's counters, shared by every producer."""

INGESTED_PREFIX = "turngraph:ingested:"
"""Marker set by the ingest job once an event is in the graph (duplicate detection)."""

GRAPH_IDENTITY = "turngraph:graph:identity"
"""Hash: the identity (``graph_id``, ``engine``) of the graph the ingested markers were
checked against; an ingest worker that starts on another graph drops the markers of turns
that graph lacks (``workers/ingest/markers.py``)."""

ADMITTED_TEMPLATE = "turngraph:admitted-markers:{week}"
"""Hash of the admitted markers written in one week (``producers/bounded_queue.py``):
event id -> the batch job it waits in (a turn published again meanwhile is a
duplicate); the ingest job deletes a turn's with the ingested marker's write, a dead
letter with its record. One hash per week, expiring a week after the week ends, so one
command writes (or reads, or deletes) a batch's markers."""

INBOX_TEMPLATE = "turngraph:inbox:{queue}"
"""The operator's bounded inbox of a queue: TurnEvent JSON, oldest first (admission moves
entries from here, and from every tenant's inbox, into RQ batch jobs)."""

INBOX_WAKE_TEMPLATE = "turngraph:inbox:{queue}:wake"
"""A one-element list the inbox script pushes to: admission block-pops it."""

ADMISSION_LIST_TEMPLATE = "turngraph:admission:{source}"
"""Entries of one inbox being admitted (``operator:<queue>`` or a tenant's name; outside
every tenant's keys: only workers touch it)."""

ADMISSION_LISTS = 8
"""Admission lists per inbox: a draining admission takes up to this many batches at once,
one per list (:func:`admission_lists`)."""


def operator_admission_list(queue: str) -> str:
    """The first admission list of the operator's inbox of ``queue``."""
    return ADMISSION_LIST_TEMPLATE.format(source=f"operator:{queue}")


def tenant_admission_list(tenant: str) -> str:
    """The first admission list of a tenant's inbox."""
    return ADMISSION_LIST_TEMPLATE.format(source=tenant)


def admission_lists(pending: str) -> list[str]:
    """Every admission list of the inbox whose first is ``pending``
    (``ADMISSION_LIST_TEMPLATE``'s): ``pending``, then ``pending:1`` and on."""
    return [pending, *(f"{pending}:{i}" for i in range(1, ADMISSION_LISTS))]


BATCH_TEMPLATE = "turngraph:batch:{job_id}"
"""The turns of one ingest batch job, stored once: the inbox entries admission took (raw
TurnEvent JSON, a tenant's unqualified), under the job's id; the job carries only their
count and tenant (``workers/batch_store.py``)."""

TOMBSTONE_PREFIX = "turngraph:forgotten:"
"""A forgotten scope key -> the forget's epoch (:data:`FORGET_EPOCH`); ingest skips the
scope's turns admitted before it (queued when it was forgotten), never later ones."""

FORGET_EPOCH = "turngraph:forget:epoch"
"""A counter every forget increments; admission stamps each batch job with its value at
the moment the batch's entries left the inbox (``admitted_epoch`` in the job's meta)."""

RECALL_REQUESTS = "turngraph:recall:requests"
"""Redis list the recall workers block-pop search requests from."""

RECALL_REPLY_PREFIX = "turngraph:recall:reply:"
"""Prefix of the per-request reply keys the recall worker answers on."""

CHANGES_STREAM = "turngraph:changes"
"""Redis stream on which ingest workers announce what they wrote (recall stays fresh)."""

REEXTRACT_PENDING = "turngraph:extraction:reextract"
"""The enrichment backlog: sorted set (score: unix time stored) of event ids the offline
rules extracted, waiting for the LLM (``workers/enrichment.py``)."""

ENRICH_REQUESTED = "turngraph:extraction:reextract:requested"
"""Set while an enrichment run is asked for and not started (one waits at a time)."""

LLM_MODE_PREFIX = "turngraph:llm:mode:"
"""Prefix of the output mode an endpoint accepts (suffix: a hash of its base URL and
model), found by one process and used by all until it expires."""

REEXTRACT_ATTEMPTS = "turngraph:extraction:reextract:attempts"
"""Hash: event id -> re-extraction batches that got an answer but nothing usable for it."""

REEXTRACT_STATS = "turngraph:extraction:reextract:stats"
"""Hash of the enrichment pass's counters: runs, succeeded, failed, missing, given_up,
entities, and ``dropped`` (turns the full backlog left unenriched)."""

LLM_STATS = "turngraph:llm:stats"
"""Hash of LLM counters across processes (``turngraph queue status``): ``<purpose>_<name>``
for purposes extraction, reextract, summary and endpoint (calls, tokens, fallbacks,
output mode refusals), and ``<purpose>_fallback:<reason>`` per fallback reason."""

DEAD_LETTERS_TEMPLATE = "turngraph:dead:{queue}"
"""Hash of the jobs an ingest worker refused or isolated as poison: job id -> JSON record
(error type, field, reason, when; never chat text). ``turngraph jobs failed`` lists it."""


LOCK_PREFIX = "turngraph:lock:"
"""Short-lived locks of maintenance jobs (one summarizer per session, one compactor per
topic); a lock expires on its own if its worker dies."""

ROLLING_CONTEXT_PREFIX = "turngraph:rolling:"
"""A session's rolling context (JSON of ``schemas.recap.RollingContext``), kept up to date
by maintenance jobs and read directly by clients."""

DISTILL_REQUESTS = "turngraph:distill:requests"
"""The asks inbox of on-demand distillation requests (summarize, recap …); admission makes
each a job on the maintenance queue (``workers/maintenance/asks.py``)."""

DISTILL_REPLY_PREFIX = "turngraph:distill:reply:"
"""Prefix of the per-request reply keys those jobs answer on."""

RECALL_REPLICA_PREFIX = "turngraph:recall:replica:"
"""A recall replica's heartbeat (JSON: change-stream position, lag, index size; expires
on its own when the replica dies). ``turngraph doctor`` reads them."""
