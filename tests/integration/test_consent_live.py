"""A running ``turngraph bridge`` sees ``turngraph consent enable|disable`` at once: the
first publish right after the command is accepted (or refused), no waiting."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import redis

from turngraph.cli import main as cli_main
from turngraph.producers.bounded_queue import read_stats
from turngraph.settings import Settings

pytestmark = pytest.mark.timeout(300)


def _ask(bridge: subprocess.Popen[bytes], request: dict[str, Any]) -> dict[str, Any]:
    assert bridge.stdin is not None and bridge.stdout is not None
    bridge.stdin.write(json.dumps(request).encode() + b"\n")
    bridge.stdin.flush()
    reply: dict[str, Any] = json.loads(bridge.stdout.readline())
    return reply


def _consent(
    action: str, env: dict[str, str], workspace: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``turngraph consent ACTION`` -- the command's own code, run in this process so that
    it lands within milliseconds of the bridge's previous check (a new interpreter takes
    longer than any re-read interval would)."""
    with pytest.MonkeyPatch.context() as patch:
        for name, value in env.items():
            if name.startswith("TURNGRAPH_"):
                patch.setenv(name, value)
        capsys.readouterr()
        assert cli_main(["consent", action, "--workspace", str(workspace)]) == 0
    assert json.loads(capsys.readouterr().out)["publishing_enabled"] is (action == "enable")


def test_publish_right_after_consent_enable_succeeds(
    settings: Settings,
    redis_conn: redis.Redis,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert settings.redis_url and settings.graph_uri
    workspace = tmp_path / "project"
    workspace.mkdir()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")},
        "TURNGRAPH_DATA_DIR": str(settings.data_dir),
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri,
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }

    def publish(index: int) -> dict[str, Any]:
        event = {
            "session_id": "consent-chat",
            "workspace": str(workspace),
            "user": "someone",
            "turn_index": index,
            "role": "user",
            "content": f"turn {index} about src/consent.py",
            "client": {"name": "consent-test", "version": "1"},
        }
        return _ask(bridge, {"id": index, "op": "publish", "event": event})

    bridge = subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "bridge"],
        env=env,
        cwd=workspace,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        refused = publish(0)
        assert not refused["success"] and refused["error_code"] == "CONSENT_REQUIRED"

        _consent("enable", env, workspace, capsys)
        accepted = publish(1)
        assert accepted["success"], accepted
        flushed = _ask(bridge, {"id": 2, "op": "flush", "timeout_s": 5})
        assert flushed["success"], flushed
        assert read_stats(redis_conn, settings.ingest_queue).enqueued == 1

        _consent("disable", env, workspace, capsys)
        withdrawn = publish(3)
        assert not withdrawn["success"] and withdrawn["error_code"] == "CONSENT_REQUIRED"
    finally:
        assert bridge.stdin is not None
        bridge.stdin.close()
        assert bridge.wait(timeout=30) == 0
