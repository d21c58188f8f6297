"""``turngraph services`` keeps its endpoints (issue 26, item 8): a server that dies is
started again on the same port and credentials while ``services`` runs, a restarted
``services`` comes back on the ports and Redis password of the one before, so a worker
started against the first one ingests a turn published after the restart, and a bridge
follows one that had to take another port (it re-reads ``services.json``)."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import urlsplit

import neo4j
import pytest
import redis

from tests.support.processes import (
    STARTUP_TIMEOUT_S,
    cli_env,
    kill_everything_of,
    services_owner,
    start,
    stop,
    wait_until,
)
from turngraph.embedded.process import port_free
from turngraph.embedded.services import STATE_FILE, ServiceEndpoints
from turngraph.producers.bounded_queue import is_ingested
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.publisher import Publisher
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.defaults import INGEST_QUEUE
from turngraph.schemas.keys import INBOX_TEMPLATE
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.workers.recall.replica import process_is_ready

pytestmark = pytest.mark.timeout(600)


def _state(data_dir: Path) -> ServiceEndpoints:
    return ServiceEndpoints(**json.loads((data_dir / STATE_FILE).read_text()))


def _services(tmp_path: Path, data_dir: Path, name: str) -> subprocess.Popen[bytes]:
    log = tmp_path / f"{name}.log"
    services = start(["services"], cli_env(data_dir), tmp_path, log)
    wait_until(
        lambda: services_owner(data_dir) == services.pid or services.poll() is not None,
        STARTUP_TIMEOUT_S,
        "services up",
    )
    assert services.poll() is None, log.read_text()[-2000:]
    return services


def _children(pid: int) -> dict[str, int]:
    """The servers ``services`` runs, by name."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        for child in (task / "children").read_text().split():
            command = Path(f"/proc/{child}/cmdline").read_bytes()
            found["redis" if b"valkey" in command or b"redis" in command else "graph"] = int(child)
    return found


def _pings(url: str) -> bool:
    try:
        with redis.Redis.from_url(url, socket_timeout=1) as conn:
            return bool(conn.ping())
    except redis.RedisError:
        return False


def _graph_answers(endpoints: ServiceEndpoints) -> bool:
    try:
        with neo4j.GraphDatabase.driver(
            endpoints.graph_uri,
            auth=(endpoints.graph_user, endpoints.graph_password),
            connection_timeout=2,
            max_transaction_retry_time=0,
        ) as driver:
            driver.execute_query("RETURN 1", database_=endpoints.graph_database)
        return True
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError):
        return False


def test_a_server_that_dies_comes_back_on_its_port_and_credentials(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    services = _services(tmp_path, data_dir, "services")
    try:
        before = _state(data_dir)
        conn = redis.Redis.from_url(before.redis_url, socket_timeout=2)
        conn.set("kept", "yes")
        servers = _children(services.pid)
        for name in ("redis", "graph"):
            os.kill(servers[name], signal.SIGKILL)
        log_file = tmp_path / "services.log"
        # The supervisor logs a restart once the server's start returned: a client can
        # reach the graph a moment before that line is written (CI read the log 5 ms early).
        wait_until(
            lambda: (
                _pings(before.redis_url)
                and _graph_answers(before)
                and log_file.read_text().count("process_restarted") == 2
            ),
            STARTUP_TIMEOUT_S,
            "both servers answering again on the endpoints services.json names, both logged",
        )
        assert _state(data_dir) == before
        assert conn.get("kept") == b"yes"  # the client made before the death reconnects
        assert set(_children(services.pid).values()).isdisjoint(servers.values())
        conn.close()
    finally:
        stop(services)
        kill_everything_of(data_dir)


def test_a_worker_follows_a_restarted_services(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    first = _services(tmp_path, data_dir, "first")
    worker = start(["worker", "ingest"], cli_env(data_dir), tmp_path, tmp_path / "worker.log")
    second = None
    try:
        before = _state(data_dir)
        first.kill()  # no clean shutdown: its servers die with it
        first.wait()
        second = _services(tmp_path, data_dir, "second")
        after = _state(data_dir)
        assert (after.redis_url, after.graph_uri) == (before.redis_url, before.graph_uri)
        assert after.owner_pid == second.pid
        event = TurnEvent(
            session_id="restart-s",
            workspace="restart-w",
            user="restart-u",
            turn_index=0,
            role="user",
            content="after the restart: edit src/after.py",
            occurred_at=datetime.now(UTC),
            client=ClientInfo(name="restart-test"),
        )
        with Publisher(redis_url=after.redis_url) as publisher:
            publisher.publish(event)
            publisher.flush(timeout_s=10)
        conn = redis.Redis.from_url(after.redis_url)
        wait_until(
            lambda: is_ingested(conn, event.event_id) or worker.poll() is not None,
            120,
            "the worker started before the restart ingests a turn published after it",
        )
        assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-3000:]
        conn.close()
    finally:
        stop(worker)
        if second is not None:
            stop(second)
        stop(first)
        kill_everything_of(data_dir)


def _ask(bridge: subprocess.Popen[bytes], request: dict[str, object]) -> dict[str, object]:
    assert bridge.stdin is not None and bridge.stdout is not None
    bridge.stdin.write(json.dumps(request).encode() + b"\n")
    bridge.stdin.flush()
    reply: dict[str, object] = json.loads(bridge.stdout.readline())
    return reply


def test_a_bridge_follows_services_restarted_on_another_port(tmp_path: Path) -> None:
    """The old Redis port is taken when ``services`` comes back, so it gets a new one: the
    bridge re-reads ``services.json`` once its Redis stops answering."""
    data_dir = tmp_path / "data"
    first = _services(tmp_path, data_dir, "first")
    hashed = ScopeHasher.for_data_dir(data_dir).workspace("/w")
    ConsentStore(data_dir).enable(hashed, consent_endpoint(None, data_dir))
    bridge = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "bridge"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=(tmp_path / "bridge.log").open("wb"),
        env=cli_env(data_dir),
        cwd=tmp_path,
    )
    second = None
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:

        def publish(index: int) -> bool:
            event = {
                **{"session_id": "s", "workspace": "/w", "user": "u", "role": "user"},
                **{"turn_index": index, "content": f"turn {index}", "client": {"name": "t"}},
            }
            # while Redis is away a publish is kept and answered BACKEND_UNAVAILABLE
            _ask(bridge, {"op": "publish", "event": event})
            return _ask(bridge, {"op": "flush", "timeout_s": 2})["success"] is True

        assert publish(0)
        before = _state(data_dir)
        old_port = urlsplit(before.redis_url).port
        assert old_port is not None
        first.kill()
        first.wait()
        wait_until(lambda: port_free(old_port), 30, "the old Redis gone with its owner")
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as servers bind
        squatter.bind(("127.0.0.1", old_port))
        squatter.listen()
        second = _services(tmp_path, data_dir, "second")
        after = _state(data_dir)
        assert after.redis_url != before.redis_url
        index = 1
        deadline = time.monotonic() + 60
        while not publish(index):
            assert time.monotonic() < deadline, (tmp_path / "bridge.log").read_text()[-3000:]
            index += 1
        with redis.Redis.from_url(after.redis_url) as conn:
            inbox = INBOX_TEMPLATE.format(queue=INGEST_QUEUE)
            assert conn.llen(inbox) >= 1  # it reached the new Redis
        assert bridge.poll() is None
    finally:
        squatter.close()
        if bridge.stdin is not None:
            bridge.stdin.close()
        bridge.wait(timeout=60)
        if second is not None:
            stop(second)
        stop(first)
        kill_everything_of(data_dir)


RESUME_S = 90.0
"""How soon workers serve again once ``services`` is back on another port (issue 35:
they never did; a bridge's recall then ended in DEADLINE_EXCEEDED). They notice within
2 s and start again as a new process: 17-24 s to serve at load 20 on two cores, so the
bound leaves room for a loaded machine."""


def test_workers_follow_services_restarted_on_another_port(tmp_path: Path) -> None:
    """The ingest and recall workers re-read ``services.json`` and start again as
    themselves (same pid) on the new endpoints."""
    data_dir = tmp_path / "data"
    first = _services(tmp_path, data_dir, "first")
    env = cli_env(data_dir)
    ingest = start(["worker", "ingest"], env, tmp_path, tmp_path / "ingest.log")
    recall = start(["worker", "recall"], env, tmp_path, tmp_path / "recall.log")
    second = None
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    host = socket.gethostname()
    try:
        before = _state(data_dir)
        with redis.Redis.from_url(before.redis_url, socket_timeout=2) as conn:
            wait_until(
                lambda: process_is_ready(conn, host, recall.pid) or recall.poll() is not None,
                STARTUP_TIMEOUT_S,
                "the recall worker serving on the first services",
            )
        old_port = urlsplit(before.redis_url).port
        assert old_port is not None
        first.kill()
        first.wait()
        wait_until(lambda: port_free(old_port), 30, "the old Redis gone with its owner")
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", old_port))
        squatter.listen()
        second = _services(tmp_path, data_dir, "second")
        after = _state(data_dir)
        assert after.redis_url != before.redis_url
        event = TurnEvent(
            session_id="moved-s",
            workspace="moved-w",
            user="moved-u",
            turn_index=0,
            role="user",
            content="after the move: edit src/moved.py",
            occurred_at=datetime.now(UTC),
            client=ClientInfo(name="restart-test"),
        )
        with Publisher(redis_url=after.redis_url) as publisher:
            publisher.publish(event)
            publisher.flush(timeout_s=10)
        with redis.Redis.from_url(after.redis_url, socket_timeout=2) as conn:

            def resumed() -> bool:
                try:
                    ready = process_is_ready(conn, host, recall.pid)
                    return ready and is_ingested(conn, event.event_id)
                except redis.RedisError:
                    return False

            wait_until(
                lambda: resumed() or ingest.poll() is not None or recall.poll() is not None,
                RESUME_S,
                "the recall worker serving and the turn ingested on the new services",
            )
        for worker, name in ((ingest, "ingest"), (recall, "recall")):
            assert worker.poll() is None, (tmp_path / f"{name}.log").read_text()[-3000:]
    finally:
        squatter.close()
        for process in (ingest, recall, second, first):
            if process is not None:
                stop(process)
        kill_everything_of(data_dir)
