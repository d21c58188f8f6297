"""Issue 26, item 1: a tenant credential cannot stop the shared Redis. It may call our
Redis Functions (``FCALL``) and the fixed commands producers need, nothing that runs code
of its own: a busy loop tried by every route is refused, our own function refuses
oversized calls, and the operator is never answered ``BUSY`` meanwhile.

Runs on a Redis server of its own: a route that got through would freeze it."""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from turngraph.credentials import issue
from turngraph.embedded import RedisServer
from turngraph.producers.tenant_inbox import INBOX_FUNCTION, TenantInbox
from turngraph.schemas.tenants import inbox_key, inbox_stats_key, inbox_wake_key

pytestmark = pytest.mark.integration

BUSY_LOOP = "local i = 0 while true do i = i + 1 end"
LIBRARY = (
    "#!lua name=spin\nredis.register_function('spin', function(keys, args) " + BUSY_LOOP + " end)"
)


class OperatorWatch:
    """Pings as the operator until stopped; records every BUSY (or other) answer."""

    def __init__(self, url: str) -> None:
        self._conn = redis.Redis.from_url(url, socket_timeout=10)
        self.rounds = 0
        self.failures: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> OperatorWatch:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)
        self._conn.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._conn.ping()
                self.rounds += 1
            except redis.RedisError as error:
                self.failures.append(f"{type(error).__name__}: {str(error)[:80]}")
            self._stop.wait(0.02)  # pacing the probe, not synchronising


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    server = RedisServer(tmp_path / "redis")
    server.start()
    try:
        with redis.Redis.from_url(server.url) as operator:
            # BUSY after 100 ms instead of 5 s: a loop that got through shows at once.
            operator.config_set("busy-reply-threshold", 100)
        yield server
    finally:
        with redis.Redis.from_url(server.url, socket_timeout=5) as operator:
            for kill in (("SCRIPT", "KILL"), ("FUNCTION", "KILL")):
                with contextlib.suppress(redis.RedisError):  # nothing running: expected
                    operator.execute_command(*kill)
        server.stop()


ROUTES: list[tuple[str, ...]] = [
    ("EVAL", BUSY_LOOP, "0"),
    ("EVAL_RO", BUSY_LOOP, "0"),
    ("SCRIPT", "LOAD", BUSY_LOOP),
    ("FUNCTION", "LOAD", LIBRARY),
    ("FUNCTION", "LOAD", "REPLACE", LIBRARY),
    ("FCALL_RO", INBOX_FUNCTION, "0"),
    ("FUNCTION", "RESTORE", b"\x00"),
    ("MULTI",),
]


def test_a_tenant_cannot_run_a_busy_loop_by_any_route(server: RedisServer) -> None:
    with redis.Redis.from_url(server.url) as operator:
        issued = issue(operator, "acme")
        sha = operator.script_load(BUSY_LOOP)  # even a script the operator has loaded
    tenant = redis.Redis.from_url(issued.redis_url(server.url), socket_timeout=5)
    refused = []
    with OperatorWatch(server.url) as watch:
        for route in [*ROUTES, ("EVALSHA", sha, "0"), ("EVALSHA_RO", sha, "0")]:
            with pytest.raises(redis.exceptions.NoPermissionError):
                tenant.execute_command(*route)
            refused.append(route[0])
        # FCALL is allowed, but only of what the operator loaded: the loop was never loaded.
        with pytest.raises(redis.exceptions.ResponseError, match="Function not found"):
            tenant.execute_command("FCALL", "spin", "0")
        # Our own function, called with hostile arguments: refused at once, not run long.
        keys = [inbox_key("acme"), inbox_stats_key("acme"), inbox_wake_key("acme")]
        for args in (["10", "drop_newest", "0", *(["{}"] * 5000)], ["x", "y", "z", "{}"]):
            with pytest.raises(redis.exceptions.ResponseError):
                tenant.fcall(INBOX_FUNCTION, 3, *keys, *args)
        # ... and with good ones it does its job.
        inbox = TenantInbox(tenant, tenant="acme", max_length=10)
        keys, args = inbox.script_call([])
        assert tenant.execute_command(*inbox.call_command(keys, [*args, b"{}"])) == [1, 0]
        deadline = time.monotonic() + 10
        while watch.rounds < 20 and time.monotonic() < deadline:
            time.sleep(0.02)  # letting the watcher take a few more rounds
    tenant.close()
    assert watch.failures == [], watch.failures
    assert watch.rounds >= 20
    assert len(refused) == len(ROUTES) + 2
