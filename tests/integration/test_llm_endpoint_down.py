"""The LLM endpoint down for three minutes under ``turngraph up`` (its workers read a
``TURNGRAPH_LLM_BASE_URL`` at a closed port): the demo's turns are stored and recalled,
the summary job stores the offline summary, no process prints a traceback, and
``turngraph doctor`` from another shell says whose LLM settings it checked."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import neo4j
import pytest

from tests.support.processes import (
    STARTUP_TIMEOUT_S,
    cli_env,
    kill_everything_of,
    run,
    start,
    stop,
    wait_until,
)
from tests.support.tcp_gate import free_port
from turngraph.embedded.services import read_endpoints

pytestmark = pytest.mark.timeout(600)

DOWN_FOR_S = 180.0
"""How long the endpoint stays down while ``up`` serves (the issue's three minutes)."""


def _summary_methods(data_dir: Path) -> list[str]:
    endpoints = read_endpoints(data_dir)
    assert endpoints is not None
    with neo4j.GraphDatabase.driver(
        endpoints.graph_uri, auth=(endpoints.graph_user, endpoints.graph_password)
    ) as driver:
        records = driver.execute_query(
            "MATCH (s:Summary) RETURN s.method AS method",
            database_=endpoints.graph_database or None,
        ).records
    return [str(record["method"]) for record in records]


def test_three_minutes_without_the_llm_no_traceback_and_an_offline_summary(
    tmp_path: Path,
) -> None:
    data_dir = tmp_path / "data"
    env = {
        **cli_env(data_dir),
        "TURNGRAPH_LOG_FORMAT": "console",  # what a person watching `up` reads
        "TURNGRAPH_LLM_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",  # nothing listens
        "TURNGRAPH_SUMMARY_EVERY_N_TURNS": "4",  # the demo's five turns make a summary due
        "TURNGRAPH_LLM_REEXTRACT_EVERY_S": "30",  # the re-extraction pass fails too, often
    }
    log = tmp_path / "up.log"
    started = time.monotonic()
    up = start(["up"], env, tmp_path, log)
    try:
        wait_until(
            lambda: (
                "turngraph is running" in log.read_text(errors="replace") or up.poll() is not None
            ),
            STARTUP_TIMEOUT_S * 2,
            "`turngraph up` serving after its demo",
        )
        output = log.read_text(errors="replace")
        assert up.poll() is None, output[-3000:]
        assert "noeviction" in output  # the demo's turns were stored and recalled

        wait_until(lambda: _summary_methods(data_dir), DOWN_FOR_S, "a summary stored")
        assert set(_summary_methods(data_dir)) == {"extractive"}  # the offline one

        shell = {k: v for k, v in cli_env(data_dir).items() if not k.startswith("TURNGRAPH_LLM")}
        doctor = run(["doctor", "--json"], shell, tmp_path)
        llm = next(c for c in json.loads(doctor.stdout)["checks"] if c["name"] == "llm")
        assert "this shell's" in llm["detail"] and "running workers use their own" in llm["detail"]

        remaining = DOWN_FOR_S - (time.monotonic() - started)
        if remaining > 0:  # `up` keeps serving for the rest of the three minutes
            with pytest.raises(subprocess.TimeoutExpired):
                up.wait(timeout=remaining)
        up.send_signal(signal.SIGTERM)
        assert up.wait(timeout=30) == 0
        output = log.read_text(errors="replace")
        assert "Traceback" not in output, output[output.find("Traceback") - 500 :][:4000]
        assert "summary_llm_fallback" in output
    finally:
        stop(up)
        kill_everything_of(data_dir)
