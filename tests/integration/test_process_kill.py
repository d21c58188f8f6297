"""A ``kill -9`` of a worker or of `up` leaves no server or worker behind and the next
`up` works; leftovers of a killed owner (orphaned servers keeping the database locked)
are cleared, and a second owner of a data folder is refused in one line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.lifecycle_runs import (
    LEFTOVER_DEADLINE_S,
    alive,
    demo_works,
    parent_of,
    up_and_serving,
)
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
from turngraph.embedded.services import read_endpoints
from turngraph.producers.publisher import Publisher
from turngraph.schemas.errors import EmbeddedServiceError
from turngraph.schemas.turn_event import ClientInfo, TurnEvent

pytestmark = [pytest.mark.heavy(170), pytest.mark.timeout(600)]


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
    up, _log = up_and_serving(tmp_path, data_dir)
    try:
        left = processes_of(data_dir)
        for kind in ("recall", "ingest", "maintenance"):  # (RQ forks schedulers too)
            assert any(f"worker {kind}" in line for line in left), left
        maintenance = [int(line.partition(":")[0]) for line in left if "worker maintenance" in line]
        worker = next(pid for pid in maintenance if parent_of(pid) == up.pid)
        forked = [pid for pid in maintenance if pid != worker and parent_of(pid) == worker]
        assert forked, left  # its scheduler
        os.kill(worker, signal.SIGKILL)
        wait_until(
            lambda: not any(alive(pid) for pid in forked),
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
        demo_works(tmp_path, data_dir)
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
        assert all(alive(pid) for pid in orphans.values())
        done = run(["up", "--exit-after-demo"], cli_env(data_dir), tmp_path)
        output = done.stdout + done.stderr
        assert done.returncode == 0, output[-3000:]
        assert "embedded_orphan_stopping" in done.stderr and "Traceback" not in output
        assert not any(alive(pid) for pid in orphans.values())
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
