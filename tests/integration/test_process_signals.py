"""Every long-running command started as a background job stops on SIGTERM and SIGINT,
`turngraph services` too; a Redis killed under `up` costs a few lines and every worker
and RQ scheduler comes back."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import redis
from rq import Worker

from tests.support.lifecycle_runs import (
    STOP_DEADLINE_S,
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
from turngraph.embedded.process import STOP_TIMEOUT_S
from turngraph.embedded.services import STATE_FILE, read_endpoints
from turngraph.workers.recall.replica import process_is_ready

pytestmark = [pytest.mark.heavy(120), pytest.mark.timeout(600)]


# -- every long-running command, as a background job, on SIGTERM and on SIGINT -----------


@pytest.fixture(scope="module")
def running_services(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """``turngraph services`` in a data folder of its own; workers find it there."""
    folder = tmp_path_factory.mktemp("lifecycle")
    data_dir = folder / "data"
    services = start(["services"], cli_env(data_dir), folder, folder / "services.log")
    try:
        wait_until(
            lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
            STARTUP_TIMEOUT_S,
            "services up",
        )
        assert services.poll() is None, (folder / "services.log").read_text()[-2000:]
        yield data_dir
    finally:
        stop(services)
        kill_everything_of(data_dir)


def _redis(data_dir: Path) -> redis.Redis:
    endpoints = read_endpoints(data_dir)
    assert endpoints is not None
    return redis.Redis.from_url(endpoints.redis_url)


def _rq_worker_registered(conn: redis.Redis, pid: int) -> bool:
    return any(worker.pid == pid for worker in Worker.all(connection=conn))


def _answers_a_line(process: subprocess.Popen[bytes], line: bytes) -> bool:
    assert process.stdin is not None and process.stdout is not None
    process.stdin.write(line + b"\n")
    process.stdin.flush()
    return bool(process.stdout.readline().strip())


MCP_INITIALIZE = json.dumps(
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "lifecycle-test", "version": "1"},
        },
    }
).encode()


@pytest.mark.parametrize("stop_signal", [signal.SIGINT, signal.SIGTERM], ids=lambda s: s.name)
@pytest.mark.parametrize(
    "command",
    ["worker recall", "worker ingest", "worker maintenance", "bridge", "mcp"],
)
def test_long_running_commands_stop_on_signals_in_the_background(
    running_services: Path, tmp_path: Path, command: str, stop_signal: signal.Signals
) -> None:
    data_dir = running_services
    conn = _redis(data_dir)
    interactive = command in ("bridge", "mcp")
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", *command.split()],
        env=cli_env(data_dir),
        cwd=tmp_path,
        stdin=subprocess.PIPE if interactive else subprocess.DEVNULL,
        stdout=subprocess.PIPE if interactive else subprocess.DEVNULL,
        stderr=(tmp_path / "err.log").open("wb"),
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    try:
        if command == "worker recall":
            host, pid = socket.gethostname(), process.pid
            wait_until(lambda: process_is_ready(conn, host, pid), STARTUP_TIMEOUT_S, "recall ready")
        elif command.startswith("worker"):
            wait_until(
                lambda: _rq_worker_registered(conn, process.pid),
                STARTUP_TIMEOUT_S,
                "RQ worker registered",
            )
        elif command == "bridge":
            assert _answers_a_line(process, b'{"id": 1, "op": "status"}')
        else:
            assert _answers_a_line(process, MCP_INITIALIZE)
        process.send_signal(stop_signal)
        # stdin stays open: the command must stop on the signal, not on end of input
        try:
            code = process.wait(timeout=STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            code = None
        errors = (tmp_path / "err.log").read_text()
        assert code == 0, f"exit {code} (None: still running); its stderr: {errors[-3000:]}"
        assert "Traceback" not in errors, errors[-2000:]
        if command == "worker recall":
            assert not process_is_ready(conn, host, pid)  # its heartbeat removed
    finally:
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
        conn.close()


def test_services_in_the_background_stop_on_sigint(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    log = tmp_path / "services.log"
    services = start(["services"], cli_env(data_dir), tmp_path, log)
    try:
        wait_until(
            lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
            STARTUP_TIMEOUT_S,
            "services up",
        )
        services.send_signal(signal.SIGINT)
        # A server that ignores SIGTERM gets SIGKILL after STOP_TIMEOUT_S: that sequence is
        # the bound (a clean-clone CI run once saw `services` still running after 20 s;
        # its log was lost, so the failure now prints it).
        try:
            code = services.wait(timeout=STOP_TIMEOUT_S + STOP_DEADLINE_S)
        except subprocess.TimeoutExpired:
            code = None  # still running: its log says where it was
        assert code == 0, f"exit {code} (None: still running): {log.read_text()[-3000:]}"
        wait_until(
            lambda: processes_of(data_dir) == [],
            2,
            lambda: f"no server left: {processes_of(data_dir)}",
        )
        assert not (data_dir / STATE_FILE).exists()
    finally:
        stop(services)
        kill_everything_of(data_dir)


REDIS_KILL_LINES = 10
"""Lines a Redis killed under `up` may cost on its terminal, recovery included (issue 35:
about 250 lines of RQ scheduler tracebacks before)."""

RECOVERY_S = 30.0
"""How soon after the kill every worker and RQ scheduler must be alive again."""


def test_redis_killed_under_up_costs_a_few_lines_and_every_child_comes_back(
    tmp_path: Path,
) -> None:
    """The maintenance worker's RQ scheduler dies with the Redis connection and RQ starts
    it again only at its next maintenance (10 minutes by default): it did not come back."""
    data_dir = tmp_path / "data"
    up, log = up_and_serving(tmp_path, data_dir)
    try:
        endpoints = read_endpoints(data_dir)
        assert endpoints is not None

        def workers() -> dict[str, psutil.Process]:
            found = {}
            for child in psutil.Process(up.pid).children():
                with contextlib.suppress(psutil.Error):
                    command = " ".join(child.cmdline())
                    for kind in ("recall", "maintenance", "ingest"):
                        if f"worker {kind}" in command:
                            found[kind] = child
            return found

        def scheduling(kinds: tuple[str, ...] = ("maintenance", "ingest")) -> bool:
            """Each RQ worker has its forked scheduler child."""
            found = workers()
            return all(kind in found and _forked(found[kind]) for kind in kinds)

        wait_until(scheduling, STARTUP_TIMEOUT_S, lambda: f"schedulers up: {workers()}")
        before = workers()
        (valkey,) = [c for c in psutil.Process(up.pid).children() if "valkey" in c.name()]
        offset = len(log.read_bytes())
        valkey.kill()
        conn = redis.Redis.from_url(endpoints.redis_url, socket_timeout=2)

        def recovered() -> bool:
            found = workers()
            if set(found) != set(before) or not scheduling():
                return False
            try:
                return process_is_ready(conn, socket.gethostname(), found["recall"].pid)
            except redis.RedisError:
                return False

        try:
            wait_until(
                recovered,
                RECOVERY_S,
                lambda: f"Redis, every worker and scheduler back: {processes_of(data_dir)}",
            )
        finally:
            conn.close()
        assert up.poll() is None
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=STOP_DEADLINE_S * 3) == 0
        said = log.read_bytes()[offset:].decode(errors="replace").splitlines()
        assert len(said) <= REDIS_KILL_LINES, "\n".join(said)
        assert any("process_restarted" in line and "redis" in line for line in said), said
    finally:
        stop(up)
        kill_everything_of(data_dir)


def _forked(worker: psutil.Process) -> bool:
    """A live child of ``worker`` running the worker's own command (RQ forks its scheduler)."""
    try:
        return any(
            child.cmdline() == worker.cmdline() and child.status() != psutil.STATUS_ZOMBIE
            for child in worker.children()
        )
    except psutil.Error:
        return False
