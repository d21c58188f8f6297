"""Node clients no one here wrote drive the real bridge and MCP server: ``node --test
producers/typescript/test`` (ajv validation against the shipped schemas, the MCP
Inspector CLI). This test starts what they talk to: Redis, the graph, a recall worker
over a few ingested turns, consent for one workspace. Needs ``npm ci --prefix
producers/typescript`` (``make install``); skipped only when Node itself is missing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from producers.consent import ConsentStore, consent_endpoint
from producers.scopes import ScopeHasher
from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients

pytestmark = pytest.mark.integration

PACKAGE = Path(__file__).resolve().parents[2] / "producers" / "typescript"
INSTALL_COMMAND = "npm ci --prefix producers/typescript"
NODE = shutil.which("node")
TESTS = [str(path.relative_to(PACKAGE)) for path in (PACKAGE / "test").glob("*.test.mjs")]

QUERY = "which eviction policy does the ingest queue use?"
INGESTED = "Decision: the ingest queue evicts with drop_oldest when it is full."


@pytest.fixture
def node_env(clients: Clients, tmp_path: Path) -> Iterator[dict[str, str]]:
    settings = clients.settings
    assert settings.redis_url
    workspace = tmp_path / "proj"
    workspace.mkdir()
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    hashed_workspace = hasher.workspace(str(workspace))
    ConsentStore(settings.data_dir).enable(
        hashed_workspace, consent_endpoint(settings.redis_url, settings.data_dir)
    )
    build_pipeline(clients).ingest(
        [
            turn(
                INGESTED,
                0,
                session=hasher.session("earlier-session"),
                workspace=hashed_workspace,
                user=hasher.user("node-user"),
            )
        ]
    )
    recall = build_recall_worker(clients)
    recall.bootstrap()
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    try:
        yield {
            **os.environ,
            "TURNGRAPH_TEST_PYTHON": sys.executable,
            "TURNGRAPH_TEST_WORKSPACE": str(workspace),
            "TURNGRAPH_TEST_QUERY": QUERY,
            "TURNGRAPH_REDIS_URL": settings.redis_url,
            "TURNGRAPH_GRAPH_URI": settings.graph_uri or "",
            "TURNGRAPH_GRAPH_USER": settings.graph_user,
            "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
            "TURNGRAPH_DATA_DIR": str(settings.data_dir),
            "TURNGRAPH_LOG_LEVEL": "WARNING",
        }
    finally:
        recall.stop()
        thread.join(timeout=10)


@pytest.mark.skipif(NODE is None, reason="node is not installed: Node clients not run")
def test_node_clients_drive_the_real_bridge_and_mcp_server(node_env: dict[str, str]) -> None:
    assert (PACKAGE / "node_modules").is_dir(), f"run `{INSTALL_COMMAND}` (make install)"
    assert NODE
    done = subprocess.run(
        [NODE, "--test", "--test-reporter=spec", *sorted(TESTS)],
        cwd=PACKAGE,
        env=node_env,
        capture_output=True,
        text=True,
        timeout=280,
    )
    report = done.stdout[-6000:] + done.stderr[-3000:]
    assert done.returncode == 0, report
    counts = dict(re.findall(r"^\S+ (pass|fail|skipped) (\d+)$", done.stdout, re.MULTILINE))
    assert counts.get("fail") == "0" and counts.get("skipped") == "0", report
    assert int(counts.get("pass", "0")) >= len(TESTS), report
