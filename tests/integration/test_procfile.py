"""The Procfile's processes, started by honcho on embedded services, serve a published turn."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

import redis

from turngraph.embedded.services import read_endpoints
from turngraph.producers.publisher import Publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.schemas.turn_event import ClientInfo, TurnEvent

ROOT = Path(__file__).resolve().parents[2]
STARTUP_S = 90.0


def _wait_for(condition, timeout_s: float):  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.2)  # polling other processes' start-up, not synchronising our own code
    raise AssertionError("condition not met in time")


def test_honcho_runs_every_process_against_embedded_services(tmp_path: Path) -> None:
    shutil.copy(ROOT / "Procfile", tmp_path / "Procfile")
    bin_dir = str(Path(sys.executable).parent)
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "TURNGRAPH_LOG_LEVEL": "WARNING",
        "TURNGRAPH_DATA_DIR": str(tmp_path / "data"),
    }
    for name in ("TURNGRAPH_REDIS_URL", "TURNGRAPH_GRAPH_URI"):
        env.pop(name, None)
    honcho = subprocess.Popen(
        [f"{bin_dir}/honcho", "start"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        endpoints = _wait_for(lambda: read_endpoints(tmp_path / "data"), STARTUP_S)
        conn = redis.Redis.from_url(endpoints.redis_url, socket_timeout=5)
        _wait_for(lambda: len(conn.smembers("rq:workers")) == 2, STARTUP_S)
        client = RecallClient(conn, deadline_ms=1_000)
        _wait_for(lambda: client.recall("warm?").success, STARTUP_S)
        event = TurnEvent(
            session_id="hs",
            workspace="hw",
            user="hu",
            turn_index=0,
            role="user",
            content="The honcho-run stack stores this turn about the zebra cache.",
            occurred_at=datetime.now(UTC),
            client=ClientInfo(name="tests"),
        )
        with Publisher(redis=conn) as publisher:
            assert publisher.publish(event)
            assert publisher.flush(timeout_s=10)
        found = _wait_for(
            lambda: [
                r
                for r in client.recall(
                    "zebra cache", session_id="hs", workspace="hw", user="hu"
                ).results
                if event.event_id in r.source_event_ids
            ],
            30,
        )
        assert "zebra cache" in found[0].text
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        output = honcho.communicate(timeout=60)[0].decode(errors="replace")
    assert "Traceback" not in output, output[-3000:]
