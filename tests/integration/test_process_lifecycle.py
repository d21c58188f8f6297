"""`turngraph up` started the way scripts and process managers start it: it stops on
SIGTERM and SIGINT (a background job inherits SIGINT ignored), also while starting; a
``kill -9`` of the services' owner leaves no server behind, and a worker or a server that
died under `up` is started again."""

from __future__ import annotations

import os
import signal
import socket
from pathlib import Path

import pytest
import redis

from tests.support.lifecycle_runs import (
    LEFTOVER_DEADLINE_S,
    STOP_DEADLINE_S,
    demo_works,
    log_says,
    parent_of,
    up_and_serving,
)
from tests.support.processes import (
    STARTUP_TIMEOUT_S,
    cli_env,
    kill_everything_of,
    processes_of,
    services_owner,
    start,
    stop,
    wait_until,
)
from turngraph.embedded.services import STATE_FILE, read_endpoints
from turngraph.workers.recall.replica import process_is_ready

pytestmark = [pytest.mark.heavy(200), pytest.mark.timeout(600)]


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_up_in_the_background_stops_on_a_signal_within_10s_leaving_nothing(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    data_dir = tmp_path / "data"
    up, log = up_and_serving(tmp_path, data_dir)
    try:
        assert len(processes_of(data_dir)) >= 6  # up, 2 servers, 3 workers
        up.send_signal(stop_signal)
        assert up.wait(timeout=STOP_DEADLINE_S) == 0, log.read_text()[-3000:]
        wait_until(
            lambda: processes_of(data_dir) == [],
            2,
            lambda: f"nothing of `up` left: {processes_of(data_dir)}",
        )
        assert not (data_dir / STATE_FILE).exists()
        assert "Traceback" not in log.read_text()
    finally:
        stop(up)
        kill_everything_of(data_dir)


def test_up_stops_on_sigterm_while_starting(tmp_path: Path) -> None:
    """A stop while the servers are up but the workers and demo are not: nothing left."""
    data_dir = tmp_path / "data"
    log = tmp_path / "up.log"
    up = start(["up"], cli_env(data_dir), tmp_path, log)
    try:
        wait_until(
            lambda: services_owner(data_dir) == up.pid or up.poll() is not None,
            STARTUP_TIMEOUT_S,
            "servers started",
        )
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=STOP_DEADLINE_S * 2) == 0, log.read_text()[-3000:]
        wait_until(
            lambda: processes_of(data_dir) == [],
            2,
            lambda: f"nothing of `up` left: {processes_of(data_dir)}",
        )
        assert "Traceback" not in log.read_text()
    finally:
        stop(up)
        kill_everything_of(data_dir)


def test_kill_9_of_services_leaves_no_server_and_the_next_up_works(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    services = start(["services"], cli_env(data_dir), tmp_path, tmp_path / "services.log")
    try:
        wait_until(
            lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
            STARTUP_TIMEOUT_S,
            "services up",
        )
        servers = [
            line for line in processes_of(data_dir) if not line.startswith(f"{services.pid}:")
        ]
        assert any("valkey-server" in line for line in servers), servers
        assert any("java" in line for line in servers), servers

        services.kill()
        services.wait()
        wait_until(
            lambda: processes_of(data_dir) == [], LEFTOVER_DEADLINE_S, "servers died with it"
        )
        assert (data_dir / STATE_FILE).exists()  # stale: nobody removed it ...
        assert read_endpoints(data_dir) is None  # ... and nobody trusts it
        demo_works(tmp_path, data_dir)
    finally:
        stop(services)
        kill_everything_of(data_dir)


def test_up_starts_again_a_worker_and_a_server_that_died(tmp_path: Path) -> None:
    """`up` is the README's run command: a recall worker that crashed or a Redis that was
    OOM-killed came back only with a restart of `up` (it said "running" meanwhile, and
    recall was simply absent)."""
    data_dir = tmp_path / "data"
    up, log = up_and_serving(tmp_path, data_dir)
    try:
        endpoints = read_endpoints(data_dir)
        assert endpoints is not None

        def children(kind: str) -> list[int]:
            return [
                int(line.partition(":")[0])
                for line in processes_of(data_dir)
                if kind in line and parent_of(int(line.partition(":")[0])) == up.pid
            ]

        (recall,) = children("worker recall")
        (valkey,) = children("valkey-server")
        os.kill(recall, signal.SIGKILL)
        os.kill(valkey, signal.SIGKILL)
        conn = redis.Redis.from_url(endpoints.redis_url, socket_timeout=2)

        def serving_again() -> bool:
            (new_recall,) = children("worker recall") or (recall,)
            if new_recall == recall or len(children("valkey-server")) != 1:
                return False
            try:  # on the same port and password: services.json did not change
                return process_is_ready(conn, socket.gethostname(), new_recall)
            except redis.RedisError:
                return False

        try:
            wait_until(
                serving_again,
                STARTUP_TIMEOUT_S * 2,
                lambda: f"Redis and a new recall worker serving again: {processes_of(data_dir)}",
            )
        finally:
            conn.close()
        assert up.poll() is None
        assert log_says(log, "process_restarted")
    finally:
        stop(up)
        kill_everything_of(data_dir)
    assert processes_of(data_dir) == []
