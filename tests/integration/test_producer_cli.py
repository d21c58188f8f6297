"""The producer commands as an editor would run them: JSON out, exit 0/1."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis

from turngraph.settings import Settings

pytestmark = pytest.mark.integration


def _cli(env: dict[str, str], cwd: Path, *args: str, stdin: str = "") -> tuple[int, list[dict]]:
    done = subprocess.run(
        [sys.executable, "-m", "turngraph.cli", *args],
        env=env,
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line]


def test_consent_publish_status_recall_and_bridge(
    redis_conn: redis.Redis, settings: Settings, tmp_path: Path
) -> None:
    assert settings.redis_url
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_DATA_DIR": str(tmp_path / "data"),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }
    workspace = tmp_path / "proj"
    workspace.mkdir()
    publish = (
        "publish",
        "db password=hunter2hunter2 rotated",
        "--session",
        "s1",
        "--turn-index",
        "0",
        "--json",
    )

    code, out = _cli(env, workspace, *publish)
    assert code == 1 and out[0]["error_code"] == "CONSENT_REQUIRED"

    code, out = _cli(env, workspace, "consent", "enable")
    assert code == 0 and out[0]["publishing_enabled"] is True

    code, out = _cli(env, workspace, *publish)
    assert code == 0 and out[0]["success"] is True
    code, out = _cli(env, workspace, "queue", "status", "--json")
    assert code == 0 and out[0]["enqueued"] == 1 and out[0]["length"] == 1
    assert out[0]["llm_reextract_pending"] == 0  # turns awaiting an LLM pass after a failure
    stored = b"".join(redis_conn.lrange(f"turngraph:inbox:{settings.ingest_queue}", 0, -1))
    assert b"hunter2hunter2" not in stored and b"[REDACTED:secret]" in stored

    code, out = _cli(
        env, workspace, "recall", "password rotation?", "--deadline-ms", "100", "--json"
    )
    assert code == 1 and out[0]["error_code"] == "DEADLINE_EXCEEDED"  # no recall worker here

    lines = "\n".join(
        [
            json.dumps({"id": 1, "op": "status"}),
            "{broken",
            json.dumps({"id": 2, "op": "flush", "timeout_s": 1}),
        ]
    )
    code, out = _cli(env, workspace, "bridge", stdin=lines + "\n")
    assert code == 0 and [r["success"] for r in out] == [True, False, True]
    assert out[1]["error_code"] == "INVALID_JSON" and out[0]["queue"]["length"] == 1
