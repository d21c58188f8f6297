"""``turngraph queue status``: the bounded ingest queue's length and counters."""

from __future__ import annotations

import argparse
import json
from typing import cast

import redis

from turngraph.cli.failures import START_REDIS_HINT, report_failure, report_no_redis
from turngraph.clients import producer_redis
from turngraph.producers.bounded_queue import read_stats
from turngraph.producers.tenant_inbox import read_inbox_stats
from turngraph.schemas.keys import REEXTRACT_STATS
from turngraph.settings import Settings
from turngraph.workers.enrichment import read_status
from turngraph.workers.extraction.shared_counts import read_shared_counts

__all__ = ["LLM_STATUS_FIELDS", "llm_status", "register", "run_queue_status"]

LLM_STATUS_FIELDS = {
    "llm_calls": ("extraction_calls", "reextract_calls", "summary_calls"),
    "llm_prompt_tokens": (
        "extraction_prompt_tokens",
        "reextract_prompt_tokens",
        "summary_prompt_tokens",
    ),
    "llm_completion_tokens": (
        "extraction_completion_tokens",
        "reextract_completion_tokens",
        "summary_completion_tokens",
    ),
    "llm_summary_fallbacks": ("summary_fallbacks",),
    "llm_mode_refusals": ("endpoint_mode_downgrades",),
    "llm_strict_requests": ("endpoint_strict_requests",),
    "llm_system_prompt_merged": ("endpoint_system_prompt_dropped",),
}
"""What ``queue status`` shows of the shared LLM counters, summed over purposes."""


def llm_status(counts: dict[str, int]) -> dict[str, int]:
    """Calls, tokens and fallbacks of every worker process, then one line per fallback
    reason (``llm_fallback[summary:LLMUnavailableError]``)."""
    status = {
        name: sum(counts.get(f, 0) for f in fields) for name, fields in LLM_STATUS_FIELDS.items()
    }
    for name in sorted(counts):
        purpose, _, reason = name.partition("_fallback:")
        if reason:
            status[f"llm_fallback[{purpose}:{reason}]"] = counts[name]
    return status


def run_queue_status(args: argparse.Namespace) -> int:
    settings = Settings()
    conn = producer_redis(settings, timeout_s=2.0)
    if conn is None:
        return report_no_redis(args)
    try:
        if settings.tenant:  # a tenant's credential sees its own inbox only
            stats = read_inbox_stats(conn, settings.tenant).as_dict()
        else:
            stats = read_stats(conn, settings.ingest_queue).as_dict()
            # the enrichment backlog: stored turns waiting for the LLM, and the pass's counts
            enrich = read_status(conn)
            stats["llm_reextract_pending"] = enrich.backlog
            stats.update(enrich.as_dict())
            counts = cast(dict[bytes, bytes], conn.hgetall(REEXTRACT_STATS))
            done = {k.decode(): int(v) for k, v in counts.items()}
            stats["llm_reextract_done"] = done.get("succeeded", 0)
            stats["llm_reextract_failed"] = done.get("failed", 0)
            stats.update(llm_status(read_shared_counts(conn)))
    except redis.RedisError as exc:
        message = f"Redis did not answer ({type(exc).__name__})"
        return report_failure(args, "BACKEND_UNAVAILABLE", message, START_REDIS_HINT)
    finally:
        conn.close()
    name = f"tenant {settings.tenant} inbox" if settings.tenant else settings.ingest_queue
    if args.json:
        print(json.dumps({"success": True, "queue": name, **stats}))
        return 0
    bound = f"max {settings.max_queue_length}, {settings.drop_policy.value}"
    print(f"queue {name}  ({bound})")
    width = max(21, *(len(key) + 2 for key in stats))
    for name, value in stats.items():
        print(f"  {name:<{width}}{value:>12}")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    queue = subparsers.add_parser("queue", help="inspect the bounded ingest queue")
    actions = queue.add_subparsers(dest="queue_action", required=True)
    status = actions.add_parser("status", help="length and counters (published, dropped, …)")
    status.add_argument("--json", action="store_true", help="one JSON object")
    status.set_defaults(handler=run_queue_status)
