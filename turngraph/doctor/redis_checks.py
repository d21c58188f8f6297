"""Redis as turngraph needs it, and what lives in it: the queue, dead letters, claims, the
ingest workers and the recall replicas' heartbeats."""

from __future__ import annotations

from typing import Any

import redis
from rq import Worker

from turngraph.doctor.checks import Check, fail, ok, warn
from turngraph.producers.bounded_queue import read_stats
from turngraph.settings import Settings
from turngraph.worker_config import config_fingerprint
from turngraph.workers.enrichment import read_status
from turngraph.workers.ingest.dead_letters import dead_letter_key
from turngraph.workers.recall.replica import read_heartbeats, stream_lag_s
from turngraph.workers.rq_adapter import worker_config

__all__ = [
    "MIN_REDIS_MAJOR", "QUEUE_FULL_WARN", "START_REDIS", "check_queue", "check_replicas",
    "check_server", "check_worker_config", "connect",
]  # fmt: skip

MIN_REDIS_MAJOR = 7
"""Redis 7+ (or Valkey 7+): Lua, streams with exclusive ranges, ACLs."""

QUEUE_FULL_WARN = 0.8
"""A queue this full (of its bound) is worth a warning: producers will soon drop."""


START_REDIS = "start it (`turngraph up` or `turngraph services`) or set TURNGRAPH_REDIS_URL"


def connect(url: str) -> redis.Redis:
    return redis.Redis.from_url(url, socket_timeout=2.0, socket_connect_timeout=1.0)


def check_server(conn: redis.Redis, where: str) -> tuple[list[Check], bool]:
    """Version, eviction policy, persistence, auth; and whether Redis answered at all."""
    try:
        info: Any = conn.info()
    except redis.AuthenticationError:
        return [fail("redis", f"{where} refused our password", "check TURNGRAPH_REDIS_URL")], False
    except redis.RedisError as exc:
        return [
            fail("redis", f"not reachable at {where} ({type(exc).__name__})", START_REDIS)
        ], False
    checks = [_version(info)]
    policy = str(info.get("maxmemory_policy", "unknown"))
    if policy == "noeviction":
        checks.append(ok("redis.eviction", "maxmemory-policy noeviction"))
    else:
        checks.append(
            fail(
                "redis.eviction",
                f"maxmemory-policy is {policy}: Redis may evict queued turns",
                "set `maxmemory-policy noeviction` in redis.conf (CONFIG SET maxmemory-policy "
                "noeviction)",
            )
        )
    checks.append(_persistence(conn, info))
    checks.append(_auth(conn))
    return checks, True


def _version(info: dict[str, Any]) -> Check:
    engine = "Valkey" if "valkey_version" in info else "Redis"
    version = str(info.get("valkey_version") or info.get("redis_version") or "0")
    # Valkey reports redis_version 7.2.4 for compatibility; its own version is newer.
    major = int(str(info.get("redis_version", "0")).split(".")[0] or 0)
    if major < MIN_REDIS_MAJOR:
        return fail(
            "redis.version", f"{engine} {version}: turngraph needs 7+", "upgrade to Redis 7+"
        )
    return ok("redis.version", f"{engine} {version}")


def _persistence(conn: redis.Redis, info: dict[str, Any]) -> Check:
    if int(info.get("aof_enabled", 0)) == 1:
        return ok("redis.persistence", "append-only file on")
    fix = "set `appendonly yes` (appendfsync everysec)"
    try:
        save: Any = conn.config_get("save")
    except redis.RedisError:
        return warn("redis.persistence", "AOF off (RDB settings not readable)", fix)
    if str(save.get("save", "")).strip():
        return warn(
            "redis.persistence", "RDB snapshots only: a crash loses turns queued since", fix
        )
    return fail("redis.persistence", "neither AOF nor RDB: a restart loses the queue", fix)


def _auth(conn: redis.Redis) -> Check:
    """A client without credentials must be refused."""
    kwargs = conn.connection_pool.connection_kwargs
    anonymous = redis.Redis(
        host=kwargs.get("host", "127.0.0.1"),
        port=int(kwargs.get("port", 6379)),
        socket_timeout=2.0,
        socket_connect_timeout=1.0,
    )
    try:
        anonymous.ping()
    except redis.AuthenticationError:
        return ok("redis.auth", "clients without the password are refused")
    except redis.ResponseError as exc:
        if "NOAUTH" in str(exc) or "NOPERM" in str(exc):
            return ok("redis.auth", "clients without the password are refused")
        return fail("redis.auth", f"unexpected answer to a client without password ({exc})", "")
    except redis.RedisError as exc:
        return warn("redis.auth", f"could not try ({type(exc).__name__})", "check the network")
    finally:
        anonymous.close()
    return fail(
        "redis.auth",
        "Redis accepts clients without a password: anyone who reaches it owns the queue",
        "set `requirepass` (or ACL users) and put the password in TURNGRAPH_REDIS_URL",
    )


def check_queue(conn: redis.Redis, settings: Settings) -> list[Check]:
    name = settings.ingest_queue
    stats = read_stats(conn, name)
    bound = settings.max_queue_length
    checks: list[Check] = []
    detail = f"{stats.length} of {bound} queued, {stats.dropped} dropped, {stats.duplicates} dup"
    if stats.length >= bound * QUEUE_FULL_WARN:
        checks.append(
            warn(
                "queue",
                detail + ": nearly full",
                "add ingest workers (`turngraph worker ingest`) or raise MAX_QUEUE_LENGTH",
            )
        )
    else:
        checks.append(ok("queue", detail))
    letters = int(conn.hlen(dead_letter_key(name)))
    if letters:
        checks.append(
            warn(
                "queue.dead_letters",
                f"{letters} dead-lettered jobs",
                "`turngraph jobs failed`, then `turngraph jobs requeue --all` or `purge`",
            )
        )
    else:
        checks.append(ok("queue.dead_letters", "none"))
    reasons = [f"{value} {reason}" for reason, value in stats.not_stored.items() if value]
    checks.append(
        ok("queue.not_stored", ", ".join(reasons) if reasons else "every published turn stored")
    )
    enrich = read_status(conn)
    detail = (
        f"{enrich.backlog} turns wait for the LLM (longest {enrich.lag_s:.0f} s), "
        f"{enrich.enriched} enriched, {enrich.dropped} dropped"
    )
    if enrich.dropped:
        checks.append(
            warn(
                "queue.enrichment",
                detail,
                "the enrichment backlog was full: a faster endpoint, more "
                "TURNGRAPH_LLM_CONCURRENCY or a larger TURNGRAPH_LLM_ENRICH_BACKLOG_MAX",
            )
        )
    else:
        checks.append(ok("queue.enrichment", detail))
    checks.append(_workers(conn, name, stats.length))
    return checks


def _workers(conn: redis.Redis, queue: str, queued: int) -> Check:
    workers = [w for w in Worker.all(connection=conn) if queue in w.queue_names()]
    start = "start one: `turngraph worker ingest`"
    if not workers and queued:
        return fail("ingest.workers", f"no ingest worker, {queued} turns waiting", start)
    if not workers:
        return warn("ingest.workers", "no ingest worker: nothing published will be stored", start)
    return ok("ingest.workers", f"{len(workers)} running")


def check_replicas(conn: redis.Redis, settings: Settings) -> list[Check]:
    beats = read_heartbeats(conn)
    if not beats:
        return [
            fail(
                "recall.replicas",
                "no recall replica is running: every recall fails",
                "start one: `turngraph worker recall`",
            )
        ]
    checks = []
    for beat in beats:
        name = f"recall.{beat.replica}"[:40]
        # compared with the stream's entries now, not only as the replica last measured it
        lag_s = max(beat.lag_s, stream_lag_s(conn, settings.changes_stream, beat.position))
        if not beat.bootstrapped:
            checks.append(
                fail(
                    name,
                    "has not read the graph yet (answers say graph_unavailable)",
                    "check the graph server (see graph above); it catches up by itself",
                )
            )
        elif lag_s > settings.recall_lag_degraded_s:
            checks.append(
                fail(
                    name,
                    f"{lag_s:.1f} s behind the change stream",
                    "the replica is overloaded: add replicas or check its CPU",
                )
            )
        else:
            checks.append(ok(name, f"{beat.memories} memories, {lag_s:.1f} s behind the stream"))
    return checks


def check_worker_config(conn: redis.Redis, settings: Settings) -> Check:
    """Whether the running workers use the LLM and embedding configuration this shell has
    (their heartbeats carry its hash: ``turngraph/worker_config.py``)."""
    own = config_fingerprint(settings)
    published: list[str] = [beat.config for beat in read_heartbeats(conn) if beat.config]
    for worker in Worker.all(connection=conn):
        value = worker_config(worker)
        if value:
            published.append(value)
    if not published:
        return warn(
            "workers.config",
            "no running worker published its configuration: llm and embeddings below are "
            "this shell's settings only",
            "start the workers (`turngraph up`) to compare theirs",
        )
    other = sum(1 for fingerprint in published if fingerprint != own)
    if other:  # not a fault of the workers: this shell's checks do not describe them
        return warn(
            "workers.config",
            f"{other} of {len(published)} running workers use another LLM or embedding "
            "configuration than this shell (endpoint host, model, output mode, embeddings)",
            "run doctor with the workers' TURNGRAPH_LLM_* / TURNGRAPH_EMBEDDING_* settings, "
            "or restart the workers with these",
        )
    return ok("workers.config", f"{len(published)} running workers use this shell's settings")
