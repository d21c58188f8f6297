"""Errors a user can cause end in one line that names what to change, from the real
``turngraph`` commands: a URL without its scheme (refused when the settings are read, the
expected form shown, the value never echoed), a data folder that cannot be written (the
path named), a turn longer than the content limit (the limit stated, the request's
``id`` echoed)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import cli_env

URL_SETTINGS = {
    "TURNGRAPH_REDIS_URL": ("localhost:6379", "redis://"),
    "TURNGRAPH_GRAPH_URI": ("localhost:7687", "bolt://"),
    "TURNGRAPH_LLM_BASE_URL": ("localhost:11434/v1", "http(s)://"),
    "TURNGRAPH_EMBEDDING_BASE_URL": ("api.example.com/v1", "http(s)://"),
}

COMMANDS = [
    ["doctor"],
    ["queue", "status"],
    ["jobs", "failed"],
    ["consent", "enable", "--workspace", "."],
    ["scopes"],
    ["recall", "anything"],
    ["mcp"],
    ["bridge"],
]


def _turngraph(
    args: list[str], env: dict[str, str], cwd: Path, stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "turngraph", *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


CASES = [("TURNGRAPH_REDIS_URL", command) for command in COMMANDS] + [
    (setting, ["doctor"]) for setting in sorted(URL_SETTINGS) if setting != "TURNGRAPH_REDIS_URL"
]
"""Every command with the Redis URL of the issue (``localhost:6379``); every URL setting
with ``doctor`` (all commands read them through the same settings object)."""


@pytest.mark.parametrize(
    ("setting", "command"), CASES, ids=lambda v: v if isinstance(v, str) else " ".join(v)
)
def test_a_url_without_its_scheme_is_refused_naming_the_form(
    tmp_path: Path, setting: str, command: list[str]
) -> None:
    value, form = URL_SETTINGS[setting]
    env = cli_env(tmp_path / "data", **{setting: value})
    if setting != "TURNGRAPH_REDIS_URL":  # configured services: nothing embedded is sought
        env["TURNGRAPH_REDIS_URL"] = "redis://127.0.0.1:1/0"
    done = _turngraph(command, env, tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, output
    assert f"invalid {setting}: expected {form}" in lines[0], output
    assert value not in output  # the value can hold a password: never echoed
    assert not (tmp_path / "data" / "consent.json").exists()  # nothing recorded


def _unwritable_folder(tmp_path: Path) -> Path:
    """A data folder this user cannot create: a read-only parent, or for root (whom
    permissions do not stop) a path in sysfs."""
    if os.geteuid() == 0:
        target = Path("/sys/fs/turngraph-test-data")
        if target.parent.is_dir() and not os.access(target.parent, os.W_OK | os.X_OK):
            return target
        try:
            target.mkdir()
        except OSError:
            return target
        target.rmdir()
        pytest.skip("no read-only place for root on this machine")
    parent = tmp_path / "read-only"
    parent.mkdir(mode=0o555)
    return parent / "data"


@pytest.mark.parametrize(
    "command", [["consent", "enable", "--workspace", "."], ["scopes"], ["up"]], ids=" ".join
)
def test_a_data_folder_that_cannot_be_written_is_named(tmp_path: Path, command: list[str]) -> None:
    folder = _unwritable_folder(tmp_path)
    done = _turngraph(command, cli_env(folder), tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 1, output
    assert "Traceback" not in output
    errors = [line for line in done.stderr.splitlines() if "error" in line]
    assert len(errors) == 1, output
    assert str(folder) in errors[0] and "TURNGRAPH_DATA_DIR" in errors[0], output


def test_an_oversized_turn_states_the_limit_and_echoes_the_id(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data")
    enabled = _turngraph(["consent", "enable", "--workspace", str(tmp_path)], env, tmp_path)
    assert enabled.returncode == 0, enabled.stderr
    event = {
        "session_id": "chat-1",
        "workspace": str(tmp_path),
        "user": "ada",
        "turn_index": 0,
        "role": "user",
        "content": "x" * 300_000,
        "client": {"name": "test", "version": "1"},
    }
    request = json.dumps({"id": "big-1", "op": "publish", "event": event})
    done = _turngraph(["bridge"], env, tmp_path, stdin=request + "\n")
    replies = [json.loads(line) for line in done.stdout.splitlines() if line.strip()]
    assert len(replies) == 1, done.stdout + done.stderr
    reply = replies[0]
    assert reply["id"] == "big-1" and reply["success"] is False
    assert reply["error_code"] == "INVALID_REQUEST"
    assert "event.content" in reply["user_message"] and "200000" in reply["user_message"]
    assert "x" * 100 not in json.dumps(reply)

    published = _turngraph(
        ["publish", "-", "--session", "chat-1", "--turn-index", "0", "--workspace", ".", "--json"],
        env,
        tmp_path,
        stdin="x" * 300_000,
    )
    assert published.returncode == 1
    answer = json.loads(published.stdout)
    assert "200000" in answer["user_message"], answer


def test_an_oversized_line_states_the_limit_and_echoes_the_id(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data")
    line = json.dumps({"id": "long-1", "op": "status", "pad": "y" * 4_100_000})
    done = _turngraph(["bridge"], env, tmp_path, stdin=line + "\n" + '{"id": 2, "op": "status"}\n')
    replies = [json.loads(reply) for reply in done.stdout.splitlines() if reply.strip()]
    assert [reply["id"] for reply in replies] == ["long-1", 2], done.stdout[:2000]
    refused = replies[0]
    assert refused["success"] is False and refused["error_code"] == "INVALID_REQUEST"
    assert "4000000 bytes" in refused["user_message"] + refused["remediation"]
    assert "Traceback" not in done.stderr


def test_a_consent_endpoint_without_its_scheme_is_refused(tmp_path: Path) -> None:
    env = cli_env(tmp_path / "data")
    done = _turngraph(["consent", "enable", "--endpoint", "localhost:6379"], env, tmp_path)
    assert done.returncode == 1
    assert done.stderr.strip().endswith(
        "invalid --endpoint: expected redis://[user:password@]"
        "host:port[/db] (or rediss://, unix:///path.sock)"
    )
    assert not (tmp_path / "data" / "consent.json").exists()  # no grant recorded
