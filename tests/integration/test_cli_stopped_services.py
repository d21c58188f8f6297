"""Every command, run while Redis and the graph server are down, ends in one line, never a
traceback: short commands exit 1 (or 0 when they need no server); long-running ones wait
or stop cleanly when asked to."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.unit.test_cli_help import _parsers
from turngraph.cli import build_parser

# Each leaf command with the arguments it needs; a new command must be added here.
SHORT_COMMANDS: dict[str, list[str]] = {
    "publish": ["publish", "a note", "--session", "s1", "--turn-index", "0"],
    "publish --json": ["publish", "a note", "--session", "s1", "--turn-index", "0", "--json"],
    "recall": ["recall", "what did we decide"],
    "recall --json": ["recall", "what did we decide", "--json"],
    "status": ["status"],
    "consent": ["consent", "status"],
    "queue status": ["queue", "status"],
    "jobs failed": ["jobs", "failed"],
    "jobs requeue": ["jobs", "requeue", "job1"],
    "jobs purge": ["jobs", "purge"],
    "graph show": ["graph", "show", "--scope", "session", "s1", "--out", "{tmp}/view.html"],
    "graph export": ["graph", "export", "--scope", "workspace", "w1", "--out", "{tmp}/x.jsonl"],
    "graph import": ["graph", "import", "{tmp}/missing.jsonl"],
    "graph indexes": ["graph", "indexes"],
    "graph style": ["graph", "style", "--out", "{tmp}/style.grass"],
    "graph migrate": ["graph", "migrate", "--from", "arcadedb"],
    "forget": ["forget", "--scope", "session", "s1", "--yes"],
    "scopes": ["scopes"],
    "recap": ["recap", "s1"],
    "summarize": ["summarize", "s1"],
    "compact": ["compact"],
    "services": ["services"],
    "credentials issue": ["credentials", "issue", "acme"],
    "credentials revoke": ["credentials", "revoke", "acme"],
    "credentials list": ["credentials", "list"],
    "embeddings rebuild": ["embeddings", "rebuild"],
    "doctor": ["doctor"],
    "hooks": ["hooks", "status"],
    "hook": ["hook", "capture", "--editor", "claude-code"],  # no payload: counted, exit 0
}
JSON_REPLIES = {"publish --json", "recall --json"}
"""Commands whose failure is the bridge's JSON reply on stdout (the scripts' contract)."""
VARIANTS = JSON_REPLIES
"""Rows that run a command already in the table with another flag."""
REPORTS = {"doctor"}
"""Commands whose output is a report (a line per check), not one error line."""
NEEDS_NO_SERVER = {"consent", "graph style", "services", "hooks", "hook"}
LONG_RUNNING: dict[str, list[str]] = {
    "up": ["up"],
    "worker ingest": ["worker", "ingest"],
    "worker recall": ["worker", "recall"],  # waits for Redis, then serves degraded
    "worker maintenance": ["worker", "maintenance"],
    "bridge": ["bridge"],
    "endpoint": ["endpoint"],
    "mcp": ["mcp"],
}
STOP_AFTER_S = 5.0


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])  # closed again when the probe is


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    port = _closed_port()
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")}
    environment.update(
        TURNGRAPH_REDIS_URL=f"redis://127.0.0.1:{port}/0",
        TURNGRAPH_GRAPH_URI=f"bolt://127.0.0.1:{port}",
        TURNGRAPH_DATA_DIR=str(tmp_path / "data"),
        TURNGRAPH_LOG_FORMAT="json",
        TURNGRAPH_EMBEDDING_PROVIDER="none",
    )
    return environment


def _not_log_lines(text: str) -> list[str]:
    lines = []
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            json.loads(line)
        except json.JSONDecodeError:
            lines.append(line)
    return lines


def test_the_table_names_every_command() -> None:
    leaves = set()
    for path, parser in _parsers(build_parser()):
        if path == "turngraph" or parser._subparsers:
            continue
        name = path.removeprefix("turngraph ")
        kinds = [a.choices for a in parser._actions if a.dest == "kind" and a.choices]
        leaves |= {f"{name} {kind}" for kind in kinds[0]} if kinds else {name}
    assert leaves == (set(SHORT_COMMANDS) - VARIANTS) | set(LONG_RUNNING)


@pytest.mark.parametrize("name", sorted(SHORT_COMMANDS))
def test_a_command_against_stopped_services_ends_in_one_line(
    name: str, env: dict[str, str], tmp_path: Path
) -> None:
    argv = [arg.format(tmp=tmp_path) for arg in SHORT_COMMANDS[name]]
    done = subprocess.run(
        [sys.executable, "-m", "turngraph", *argv],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output[-2000:]
    if name == "status":  # a report that memory is not reachable, and exit 1
        assert done.returncode == 1, output[-2000:]
        assert "not reachable" in done.stdout, output[-2000:]
        return
    if name in NEEDS_NO_SERVER:
        assert done.returncode == 0, output[-2000:]
        return
    assert done.returncode == 1, output[-2000:]
    errors = _not_log_lines(done.stderr)
    replies = _not_log_lines(done.stdout)
    if name in REPORTS:
        assert "FAIL" in done.stdout + done.stderr, output[-2000:]
        return
    if name in JSON_REPLIES:  # the bridge's contract: one JSON reply on stdout
        assert len(done.stdout.splitlines()) == 1 and not errors, output[-2000:]
        reply = json.loads(done.stdout)
        assert reply["success"] is False and reply["error_code"] and reply["remediation"]
        return
    if name in {"publish", "recall"}:  # a person's line: the code, the message and the fix
        assert len(errors) == 1 and not replies, output[-2000:]
        assert errors[0].startswith(("CONSENT_REQUIRED: ", "BACKEND_UNAVAILABLE: ")), errors
        assert "turngraph " in errors[0], errors  # names the command that fixes it
        return
    assert len(errors) == 1, errors
    assert "error" in errors[0] and not replies


@pytest.mark.parametrize("name", sorted(LONG_RUNNING))
def test_a_long_running_command_stops_cleanly_when_asked(
    name: str, env: dict[str, str], tmp_path: Path
) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph", *LONG_RUNNING[name]],
        env=env,
        cwd=tmp_path,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=STOP_AFTER_S)
    except subprocess.TimeoutExpired:
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert "Traceback" not in out + err, (out + err)[-2000:]
    assert process.returncode in (0, 1, -signal.SIGTERM), (out + err)[-2000:]


def test_a_worker_waiting_for_the_embedded_services_says_so(tmp_path: Path) -> None:
    # It waited up to 90 s for `turngraph services` printing nothing at all: a worker
    # started alone, as a Procfile line run by hand, looked hung.
    environment = {k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")}
    environment.update(TURNGRAPH_DATA_DIR=str(tmp_path / "data"), TURNGRAPH_LOG_FORMAT="json")
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph", "worker", "ingest"],
        env=environment,
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stderr is not None
        first = json.loads(process.stderr.readline())  # blocks until the first line
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert first["event"] == "waiting_for_embedded_services", first
    assert first["data_dir"] == str(tmp_path / "data") and "turngraph services" in first["fix"]
