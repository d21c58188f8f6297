"""Tenant credentials are real Redis ACL users: a producer credential can publish into and
recall through its own tenant's keys, and nothing else (SPEC §8)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from tests.support.turns import turn
from turngraph.credentials import issue, issued_tenants, revoke
from turngraph.embedded import RedisServer
from turngraph.embedded.redis_server import ACL_FILE
from turngraph.producers.bounded_queue import BoundedQueue
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.tenant_inbox import TenantInbox, read_inbox_stats
from turngraph.schemas.keys import CHANGES_STREAM, RECALL_REPLY_PREFIX, RECALL_REQUESTS
from turngraph.schemas.shards import NO_REPLICA, request_shard, shard_alive_key, shard_requests_key
from turngraph.schemas.tenants import (
    TENANTS_KEY,
    acl_user,
    inbox_key,
    qualify,
    recall_reply_prefix,
    recall_requests_key,
)
from turngraph.settings import Settings

pytestmark = pytest.mark.integration


def _tenant_conn(admin_url: str, tenant: str, admin: redis.Redis) -> redis.Redis:
    return redis.Redis.from_url(issue(admin, tenant).redis_url(admin_url), socket_timeout=5)


@pytest.fixture
def acme(settings: Settings, redis_conn: redis.Redis) -> Iterator[redis.Redis]:
    assert settings.redis_url
    conn = _tenant_conn(settings.redis_url, "acme", redis_conn)
    yield conn
    conn.close()


def test_a_tenant_publishes_into_its_own_inbox_and_reads_its_counters(
    acme: redis.Redis, redis_conn: redis.Redis
) -> None:
    inbox = TenantInbox(acme, tenant="acme", max_length=10)
    result = inbox.enqueue_many([turn("hello", 0), turn("again", 1)])
    assert len(result.outcomes) == 2
    assert redis_conn.llen(inbox_key("acme")) == 2
    stats = read_inbox_stats(acme, "acme")
    assert (stats.published, stats.enqueued, stats.length) == (2, 2, 2)
    assert redis_conn.sismember(TENANTS_KEY, "acme")


FORBIDDEN = [
    ("HSET", "rq:job:forged", "data", "x"),  # an RQ job hash
    ("RPUSH", "rq:queue:turngraph-ingest", "forged"),  # the RQ queue itself
    ("XRANGE", CHANGES_STREAM, "-", "+"),  # the change stream: chat text and scope keys
    ("XREAD", "STREAMS", CHANGES_STREAM, "0-0"),
    ("RPUSH", RECALL_REQUESTS, "{}"),  # the operator's recall list (unqualified scopes)
    ("BLPOP", RECALL_REPLY_PREFIX + "someone", "0.01"),  # the operator's reply keys
    ("RPUSH", "turngraph:t:other:inbox", "{}"),  # another tenant's inbox
    ("BLPOP", recall_reply_prefix("other") + "r1", "0.01"),  # another tenant's reply key
    ("RPUSH", "turngraph:t:other:recall:requests", "{}"),
    ("HINCRBY", "turngraph:queue:turngraph-ingest:stats", "enqueued", "1"),
    ("GET", "turngraph:ingested:x"),
    ("KEYS", "*"),
    ("SCAN", "0"),
    ("CONFIG", "SET", "appendonly", "no"),
    ("FLUSHALL",),
    ("EVAL", "return 1", "0"),
    ("FUNCTION", "LOAD", "#!lua name=x\nredis.register_function('f', function() return 1 end)"),
    ("SCRIPT", "FLUSH"),
    ("ACL", "SETUSER", "tenant-acme", "+@all"),
    ("ACL", "LIST"),
    ("SUBSCRIBE", "anything"),
    ("ZADD", "turngraph:recall:shard-alive:0", "99999999999999", "forged"),  # read-only claims
    ("ZRANGE", "turngraph:recall:shard-alive:0", "0", "-1"),  # which replicas: not a tenant's
]


@pytest.mark.parametrize("command", FORBIDDEN, ids=lambda c: " ".join(c[:2]))
def test_a_producer_credential_can_do_nothing_else(
    acme: redis.Redis, redis_conn: redis.Redis, command: tuple[str, ...]
) -> None:
    redis_conn.xadd(CHANGES_STREAM, {"change": "{}"})
    with pytest.raises(redis.exceptions.NoPermissionError):
        acme.execute_command(*command)
    assert not redis_conn.exists("rq:job:forged", "turngraph:t:other:inbox")
    assert redis_conn.xlen(CHANGES_STREAM) == 1


def test_a_sharded_tenant_client_fails_fast_without_a_replica_and_routes_with_one(
    acme: redis.Redis, redis_conn: redis.Redis
) -> None:
    client = RecallClient.for_tenant(acme, "acme", deadline_ms=2_000, shards=4)
    missing = client.recall("anything", workspace="w1", scopes=("workspace",))
    assert missing.degraded == [NO_REPLICA]  # ZCOUNT allowed on the claims, nothing else
    shard = request_shard(qualify("acme", "w1"), None, 4)
    redis_conn.zadd(shard_alive_key(shard), {"replica": 99_999_999_999_999})
    late = client.recall("anything", workspace="w1", scopes=("workspace",), deadline_ms=100)
    assert late.degraded == ["deadline_exceeded"]  # pushed: nobody pops it here
    key = shard_requests_key(recall_requests_key("acme"), shard, 4)
    assert redis_conn.llen(key) == 1


def test_the_bounded_queue_script_cannot_write_jobs_for_a_tenant(acme: redis.Redis) -> None:
    """Scripts run with the caller's permissions: enqueue.lua gains a tenant nothing."""
    with pytest.raises(redis.exceptions.NoPermissionError):
        BoundedQueue(acme, max_length=10).enqueue(turn("forged", 0))


def test_the_secret_is_stored_only_as_a_hash_and_revoke_disconnects(
    settings: Settings, redis_conn: redis.Redis, embedded: object
) -> None:
    assert settings.redis_url
    issued = issue(redis_conn, "acme")
    rules = redis_conn.acl_getuser(acl_user("acme"))
    assert issued.secret not in repr(rules) and issued.secret not in repr(redis_conn.acl_list())
    assert issued.persisted == "acl_file"
    conn = redis.Redis.from_url(issued.redis_url(settings.redis_url), socket_timeout=5)
    assert conn.ping()
    assert issued_tenants(redis_conn) == {"acme": True}
    assert revoke(redis_conn, "acme") == (True, "acl_file")
    with pytest.raises((redis.ConnectionError, redis.AuthenticationError)):
        conn.ping()  # Redis closed its connection; it cannot authenticate again
    with pytest.raises(redis.AuthenticationError):
        conn.ping()
    assert issued_tenants(redis_conn) == {"acme": False}
    assert revoke(redis_conn, "acme")[0] is False


def test_reissuing_rotates_the_secret(settings: Settings, redis_conn: redis.Redis) -> None:
    assert settings.redis_url
    first = issue(redis_conn, "acme")
    second = issue(redis_conn, "acme")
    assert first.secret != second.secret
    with pytest.raises(redis.AuthenticationError):
        redis.Redis.from_url(first.redis_url(settings.redis_url)).ping()
    assert redis.Redis.from_url(second.redis_url(settings.redis_url)).ping()


def test_embedded_redis_keeps_tenant_users_across_restarts(tmp_path: Path) -> None:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        with redis.Redis.from_url(server.url) as admin:
            issued = issue(admin, "acme")
        server.stop()
        old_password = server.password
        server = RedisServer(tmp_path / "redis", port=server.port)
        server.start()
        assert server.password != old_password
        acl = (tmp_path / "redis" / ACL_FILE).read_text()
        assert "user tenant-acme on #" in acl and issued.secret not in acl
        assert server.password not in acl and acl.count("user default ") == 1
        assert stat.S_IMODE((tmp_path / "redis" / ACL_FILE).stat().st_mode) == 0o600
        with redis.Redis.from_url(issued.redis_url(server.url)) as tenant:
            assert tenant.rpush(inbox_key("acme"), "x") == 1
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port, socket_timeout=2).ping()
        with pytest.raises(redis.AuthenticationError):
            redis.Redis(port=server.port, password=old_password, socket_timeout=2).ping()
    finally:
        server.stop()


def _cli(args: list[str], settings: Settings, **env: str) -> subprocess.CompletedProcess[str]:
    assert settings.redis_url
    environment = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri or "",
        "TURNGRAPH_DATA_DIR": str(settings.data_dir),
        **env,
    }
    return subprocess.run(
        [sys.executable, "-m", "turngraph", "credentials", *args],
        capture_output=True,
        text=True,
        env=environment,
        timeout=60,
        check=False,
    )


def test_credentials_issue_writes_a_private_file_and_the_secret_nowhere_else(
    settings: Settings, redis_conn: redis.Redis, tmp_path: Path
) -> None:
    out = tmp_path / "acme.env"
    done = _cli(["issue", "acme", "--out", str(out)], settings)
    assert done.returncode == 0, done.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    lines = dict(line.split("=", 1) for line in out.read_text().splitlines())
    assert lines["TURNGRAPH_TENANT"] == "acme"
    url = lines["TURNGRAPH_REDIS_URL"]
    secret = redis.connection.parse_url(url)["password"]
    assert secret not in done.stdout + done.stderr
    assert redis.Redis.from_url(url).ping()
    assert _cli(["issue", "acme", "--out", str(out)], settings).returncode == 1  # no overwrite

    printed = _cli(["issue", "beta"], settings)
    assert printed.returncode == 0 and printed.stdout.startswith("TURNGRAPH_REDIS_URL=redis://")
    assert "TURNGRAPH_TENANT=beta" in printed.stdout
    listed = json.loads(_cli(["list", "--json"], settings).stdout)
    assert listed["tenants"] == {"acme": True, "beta": True}
    assert _cli(["revoke", "beta"], settings).returncode == 0
    assert _cli(["revoke", "beta"], settings).returncode == 1
    assert _cli(["issue", "Bad-Name"], settings).returncode == 1
    reserved = _cli(["issue", "operator"], settings)
    assert reserved.returncode == 1 and "reserved" in reserved.stdout + reserved.stderr
    assert b"operator" not in redis_conn.smembers(TENANTS_KEY)
    as_tenant = _cli(["issue", "gamma"], settings, TURNGRAPH_TENANT="acme")
    assert as_tenant.returncode == 1 and "tenant cannot manage" in as_tenant.stderr
