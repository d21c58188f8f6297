"""``turngraph jobs failed|requeue|purge``: dead letters and failed jobs, for people.

Lists id, error type, field, reason and when; never the job's data (chat text).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from dataclasses import asdict
from datetime import UTC, datetime

import redis

from turngraph.cli.failures import report_failure, report_no_redis
from turngraph.clients import producer_redis
from turngraph.settings import Settings
from turngraph.workers.ingest import dead_letters
from turngraph.workers.ingest.envelope import EnvelopeError

__all__ = ["register", "run_failed", "run_purge", "run_requeue"]


def _on_redis(args: argparse.Namespace, work: Callable[[redis.Redis, str], int]) -> int:
    """``work`` on the operator's Redis and the ingest queue's name; a Redis error or no
    Redis at all ends in one typed failure."""
    settings = Settings()
    conn = producer_redis(settings)
    if conn is None:
        return report_no_redis(args)
    try:
        return work(conn, settings.ingest_queue)
    except redis.RedisError as exc:
        return report_failure(args, "BACKEND_UNAVAILABLE", f"Redis: {type(exc).__name__}", "retry")
    finally:
        conn.close()


def run_failed(args: argparse.Namespace) -> int:
    return _on_redis(args, lambda conn, queue: _show_failed(args, conn, queue))


def _show_failed(args: argparse.Namespace, conn: redis.Redis, queue: str) -> int:
    jobs = dead_letters.failed_jobs(conn, queue)
    if args.json:
        print(json.dumps({"success": True, "queue": queue, "jobs": [asdict(j) for j in jobs]}))
        return 0
    print(f"{len(jobs)} failed job(s) on {queue}")
    for job in jobs:
        when = datetime.fromtimestamp(job.at, UTC).strftime("%Y-%m-%d %H:%M:%S") if job.at else "-"
        where = f"{job.field}: {job.reason}" if job.field else ""
        print(f"  {job.job_id!r:<40} {when}  {job.error:<22} {where}")
    return 0


def run_requeue(args: argparse.Namespace) -> int:
    return _on_redis(args, lambda conn, queue: _requeue(args, conn, queue))


def _requeue(args: argparse.Namespace, conn: redis.Redis, queue: str) -> int:
    failed = dead_letters.failed_jobs(conn, queue) if args.all else []
    requeued, refused = [], []
    for job_id in [job.job_id for job in failed] if args.all else [args.job_id]:
        try:
            dead_letters.requeue(conn, queue, job_id)
            requeued.append(job_id)
        except EnvelopeError as exc:
            refused.append({"job_id": job_id, "field": exc.field, "reason": exc.reason})
    if args.json:
        print(json.dumps({"success": not refused, "requeued": requeued, "refused": refused}))
    else:
        print(f"requeued {len(requeued)}")
        for item in refused:
            print(
                f"  not requeued {item['job_id']!r}: {item['field']}: {item['reason']} (purge it)"
            )
    return 0 if not refused else 1


def run_purge(args: argparse.Namespace) -> int:
    def purge(conn: redis.Redis, queue: str) -> int:
        purged = dead_letters.purge(conn, queue)
        print(json.dumps({"success": True, "purged": purged}) if args.json else f"purged {purged}")
        return 0

    return _on_redis(args, purge)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    jobs = subparsers.add_parser("jobs", help="failed ingest jobs: list, requeue, purge")
    actions = jobs.add_subparsers(dest="jobs_action", required=True)
    failed = actions.add_parser("failed", help="id, error, field, reason, when (never chat text)")
    failed.add_argument("--json", action="store_true", help="one JSON object")
    failed.set_defaults(handler=run_failed)
    requeue = actions.add_parser("requeue", help="put failed jobs back on the queue")
    which = requeue.add_mutually_exclusive_group(required=True)
    which.add_argument("job_id", nargs="?", help="one job id")
    which.add_argument("--all", action="store_true", help="every failed job")
    requeue.add_argument("--json", action="store_true", help="one JSON object")
    requeue.set_defaults(handler=run_requeue)
    purge = actions.add_parser("purge", help="delete every failed job and its record")
    purge.add_argument("--json", action="store_true", help="one JSON object")
    purge.set_defaults(handler=run_purge)
