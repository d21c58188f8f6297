"""Real ``turngraph`` processes started the way scripts and process managers start them:
they stop on SIGTERM and SIGINT (a background job inherits SIGINT ignored), a ``kill -9``
of the owner leaves no server or worker behind, and leftovers of a killed owner (a stale
``services.json``, orphaned servers keeping the database locked) are cleared or reported
in one line."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import psutil
import pytest
import redis
from rq import Worker

from tests.support.processes import (
    STARTUP_TIMEOUT_S,
    cli_env,
    kill_everything_of,
    processes_of,
    run,
    services_owner,
    start,
    stop,
    wait_until,
)
from turngraph.embedded.graph_server import GraphServer
from turngraph.embedded.process import STOP_TIMEOUT_S
from turngraph.embedded.services import STATE_FILE, read_endpoints
from turngraph.producers.publisher import Publisher
from turngraph.schemas.errors import EmbeddedServiceError
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.workers.recall.replica import process_is_ready

pytestmark = pytest.mark.timeout(600)

LEFTOVER_DEADLINE_S = 10.0
"""How soon after its owner's death no server or worker of a data folder may remain."""

STOP_DEADLINE_S = 10.0
"""How soon a signalled long-running command must have exited, its children with it."""

RUNNING = "turngraph is running"


def _log_says(log: Path, text: str) -> bool:
    return log.exists() and text in log.read_text(errors="replace")


def _up_and_serving(tmp_path: Path, data_dir: Path) -> tuple[subprocess.Popen[bytes], Path]:
    log = tmp_path / "up.log"
    up = start(["up"], cli_env(data_dir), tmp_path, log)
    wait_until(
        lambda: _log_says(log, RUNNING) or up.poll() is not None,
        STARTUP_TIMEOUT_S * 2,
        "`turngraph up` serving after its demo",
    )
    assert up.poll() is None, log.read_text()[-3000:]
    return up, log


def _demo_works(tmp_path: Path, data_dir: Path) -> None:
    done = run(["up", "--exit-after-demo"], cli_env(data_dir), tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-3000:]
    assert "noeviction" in done.stdout and "Traceback" not in output


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT], ids=lambda s: s.name)
def test_up_in_the_background_stops_on_a_signal_within_10s_leaving_nothing(
    tmp_path: Path, stop_signal: signal.Signals
) -> None:
    data_dir = tmp_path / "data"
    up, log = _up_and_serving(tmp_path, data_dir)
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
        _demo_works(tmp_path, data_dir)
    finally:
        stop(services)
        kill_everything_of(data_dir)


def test_up_starts_again_a_worker_and_a_server_that_died(tmp_path: Path) -> None:
    """`up` is the README's run command: a recall worker that crashed or a Redis that was
    OOM-killed came back only with a restart of `up` (it said "running" meanwhile, and
    recall was simply absent)."""
    data_dir = tmp_path / "data"
    up, log = _up_and_serving(tmp_path, data_dir)
    try:
        endpoints = read_endpoints(data_dir)
        assert endpoints is not None

        def children(kind: str) -> list[int]:
            return [
                int(line.partition(":")[0])
                for line in processes_of(data_dir)
                if kind in line and _parent_of(int(line.partition(":")[0])) == up.pid
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
        assert _log_says(log, "process_restarted")
    finally:
        stop(up)
        kill_everything_of(data_dir)
    assert processes_of(data_dir) == []


def _parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[1])


def _publish_a_burst(data_dir: Path, turns: int) -> None:
    """Enough turns that the ingest worker holds a batch when `up` is killed."""
    endpoints = read_endpoints(data_dir)
    assert endpoints is not None
    now = datetime.now(UTC)
    publisher = Publisher(redis_url=endpoints.redis_url)
    try:
        for index in range(turns):
            publisher.publish(
                TurnEvent(
                    session_id="burst",
                    workspace="lifecycle",
                    user="tester",
                    turn_index=index,
                    role="user" if index % 2 == 0 else "assistant",
                    content=f"Turn {index}: we keep the billing ledger in PostgreSQL. " * 8,
                    occurred_at=now,
                    client=ClientInfo(name="lifecycle-test"),
                )
            )
        publisher.flush(timeout_s=30)
    finally:
        publisher.close()


def test_kill_9_of_a_worker_or_of_up_leaves_nothing_and_the_next_up_works(
    tmp_path: Path,
) -> None:
    """A killed worker takes the RQ scheduler it forked with it (the kernel does not
    carry a parent-death signal into a fork: it lived on, holding the scheduler locks);
    a killed `up` takes everything, also a worker in the middle of a batch (on a loaded
    machine one ran on for 50 s against the dead servers before its warm stop)."""
    data_dir = tmp_path / "data"
    up, _log = _up_and_serving(tmp_path, data_dir)
    try:
        left = processes_of(data_dir)
        for kind in ("recall", "ingest", "maintenance"):  # (RQ forks schedulers too)
            assert any(f"worker {kind}" in line for line in left), left
        maintenance = [int(line.partition(":")[0]) for line in left if "worker maintenance" in line]
        worker = next(pid for pid in maintenance if _parent_of(pid) == up.pid)
        forked = [pid for pid in maintenance if pid != worker and _parent_of(pid) == worker]
        assert forked, left  # its scheduler
        os.kill(worker, signal.SIGKILL)
        wait_until(
            lambda: not any(_alive(pid) for pid in forked),
            LEFTOVER_DEADLINE_S,
            "the killed worker's scheduler died with it",
        )

        _publish_a_burst(data_dir, turns=600)
        up.kill()
        up.wait()
        wait_until(
            lambda: processes_of(data_dir) == [],
            LEFTOVER_DEADLINE_S,
            "servers and workers died with it",
        )
        _demo_works(tmp_path, data_dir)
    finally:
        stop(up)
        kill_everything_of(data_dir)


def test_orphaned_servers_of_a_killed_owner_are_cleared(tmp_path: Path) -> None:
    """Servers left running by an owner without parent-death signals keep the graph
    database locked; the next owner stops them (one log line) and starts cleanly."""
    data_dir = tmp_path / "data"
    left = subprocess.run(
        [sys.executable, "-m", "tests.support.orphan_services", str(data_dir)],
        env=cli_env(data_dir),
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_S,
        check=True,
    )
    orphans = json.loads(left.stdout)
    try:
        assert all(_alive(pid) for pid in orphans.values())
        done = run(["up", "--exit-after-demo"], cli_env(data_dir), tmp_path)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-3000:]
        assert "embedded_orphan_stopping" in done.stderr and "Traceback" not in output
        assert not any(_alive(pid) for pid in orphans.values())
        assert processes_of(data_dir) == []
    finally:
        kill_everything_of(data_dir)


def test_a_second_owner_is_refused_in_one_line(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    services = start(["services"], cli_env(data_dir), tmp_path, tmp_path / "services.log")
    try:
        wait_until(
            lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
            STARTUP_TIMEOUT_S,
            "services up",
        )
        for command in (["services"], ["up", "--exit-after-demo"]):
            second = run(command, cli_env(data_dir), tmp_path, timeout_s=60)
            assert second.returncode == 1
            lines = second.stderr.strip().splitlines()
            assert len(lines) == 1, second.stderr
            assert f"already run in process {services.pid}" in lines[0]
            assert f"kill {services.pid}" in lines[0] and "TURNGRAPH_DATA_DIR" in lines[0]
        assert services.poll() is None  # the first owner is untouched

        # A graph server that is not ours holding the database: named, with the fix.
        foreign = GraphServer(data_dir / "graph")
        with pytest.raises(EmbeddedServiceError) as refused:
            foreign.start()
        graph_pids = [
            int(line.partition(":")[0]) for line in processes_of(data_dir) if "java" in line
        ]
        message = str(refused.value)
        assert "is locked by process" in message and "\n" not in message
        assert f"kill {graph_pids[0]}" in message, (message, graph_pids)
    finally:
        stop(services)
        kill_everything_of(data_dir)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"


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
    up, log = _up_and_serving(tmp_path, data_dir)
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
