"""An editor's commands on a tenant credential: publish, status, recall and the bridge use
the tenant's keys only, and the turn reaches the graph under the tenant's scopes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from turngraph.app import build_admission, build_ingest_worker
from turngraph.clients import Clients
from turngraph.credentials import issue
from turngraph.schemas.tenants import inbox_key

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
        check=False,
    )
    return done.returncode, [json.loads(line) for line in done.stdout.splitlines() if line]


def _as_acme(clients: Clients, tmp_path: Path) -> tuple[dict[str, str], Path]:
    """The environment of a producer on a credential issued to tenant acme, and an empty
    workspace folder to run it in."""
    assert clients.settings.redis_url
    issued = issue(clients.redis, "acme")
    env = {
        **os.environ,
        "TURNGRAPH_REDIS_URL": issued.redis_url(clients.settings.redis_url),
        "TURNGRAPH_TENANT": "acme",
        "TURNGRAPH_DATA_DIR": str(tmp_path / "data"),
        "TURNGRAPH_LOG_LEVEL": "WARNING",
    }
    workspace = tmp_path / "proj"
    workspace.mkdir()
    return env, workspace


def test_a_tenant_producer_publishes_reads_its_status_and_asks_recall(
    clients: Clients, tmp_path: Path
) -> None:
    env, workspace = _as_acme(clients, tmp_path)
    assert _cli(env, workspace, "consent", "enable")[0] == 0
    code, out = _cli(
        env, workspace, "publish", "db password=hunter2hunter2 rotated", "--session", "s1",
        "--turn-index", "0", "--json",
    )  # fmt: skip
    assert code == 0 and out[0]["success"] is True, out
    assert clients.redis.llen(inbox_key("acme")) == 1
    assert b"hunter2hunter2" not in clients.redis.lindex(inbox_key("acme"), 0)  # type: ignore[operator]

    code, out = _cli(env, workspace, "queue", "status", "--json")
    assert code == 0 and out[0]["queue"] == "tenant acme inbox"
    assert (out[0]["published"], out[0]["enqueued"], out[0]["length"]) == (1, 1, 1)

    code, out = _cli(
        env, workspace, "recall", "password rotation?", "--deadline-ms", "200", "--json"
    )
    assert code == 1 and out[0]["error_code"] == "DEADLINE_EXCEEDED"  # no recall worker here
    assert clients.redis.llen("turngraph:t:acme:recall:requests") == 1
    assert clients.redis.llen("turngraph:recall:requests") == 0

    code, out = _cli(env, workspace, "bridge", stdin=json.dumps({"id": 1, "op": "status"}) + "\n")
    assert code == 0 and out[0]["success"] and out[0]["queue"]["published"] == 1

    admission = build_admission(clients)
    assert admission.admit_all() == 1
    build_ingest_worker(clients).work(burst=True, with_scheduler=False)
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN e.workspace AS w, e.session_id AS s",
        database_=clients.graph_database,
    )
    assert len(records) == 1
    assert records[0]["w"].startswith("t-acme-w_") and records[0]["s"].startswith("t-acme-s_")


def test_distilled_memory_on_a_tenant_credential_says_why_it_is_not_there(
    clients: Clients, tmp_path: Path
) -> None:
    # Redis refuses these keys to a tenant (docs/security.md, Limits); the bridge said
    # "memory is unavailable right now: check that Redis and a maintenance worker are
    # running", which no operator action on the workers would change.
    env, workspace = _as_acme(clients, tmp_path)
    lines = [
        {"id": 1, "op": "context", "session_id": "s1"},
        {"id": 2, "op": "summary", "memory_id": "m1", "deadline_ms": 2_000},
        {"id": 3, "op": "recap", "workspace": str(workspace), "deadline_ms": 2_000},
    ]
    code, out = _cli(env, workspace, "bridge", stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert code == 0 and [reply["id"] for reply in out] == [1, 2, 3]
    for reply in out:
        assert reply["error_code"] == "NOT_AVAILABLE", reply
        assert "tenant" in reply["user_message"] and "TURNGRAPH_TENANT" in reply["remediation"]
    assert clients.redis.llen("turngraph:distill:requests") == 0
