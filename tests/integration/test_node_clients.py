"""Node clients no one here wrote drive the real bridge and MCP server: ``node --test
producers/typescript/test`` (ajv validation against the shipped schemas, the MCP
Inspector CLI). This test starts what they talk to: Redis, the graph, a recall worker
over a few ingested turns, a maintenance worker process (the distill ops), consent for
one workspace. Needs ``npm ci --prefix
producers/typescript`` (``make install``); skipped only when Node itself is missing."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.maintenance import maintenance_worker, service_env
from tests.support.turns import turn
from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.scopes import ScopeHasher

pytestmark = pytest.mark.integration

PACKAGE = Path(__file__).resolve().parents[2] / "producers" / "typescript"
INSTALL_COMMAND = "npm ci --prefix producers/typescript"
NODE = shutil.which("node")
TESTS = [str(path.relative_to(PACKAGE)) for path in (PACKAGE / "test").glob("*.test.mjs")]

QUERY = "which eviction policy does the ingest queue use?"
INGESTED = "Decision: the ingest queue evicts with drop_oldest when it is full."
NEXT_STEP = "Next: add a counter of dropped events in producers/bounded_queue.py."


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
                text,
                index,
                session=hasher.session("earlier-session"),
                workspace=hashed_workspace,
                user=hasher.user("node-user"),
            )
            for index, text in enumerate((INGESTED, NEXT_STEP))
        ]
    )
    recall = build_recall_worker(clients)
    recall.bootstrap()
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    env = service_env(settings)
    try:
        with maintenance_worker(env):
            yield {
                **env,
                "TURNGRAPH_TEST_PYTHON": sys.executable,
                "TURNGRAPH_TEST_WORKSPACE": str(workspace),
                "TURNGRAPH_TEST_QUERY": QUERY,
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
