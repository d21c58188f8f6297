"""``turngraph doctor`` as a real process on the real servers: ``--smoke`` passes with real
workers running; each missing piece fails with exactly one clear line (and its fix), exit
1, no traceback."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from rq import Worker

from tests.support.tcp_gate import free_port
from tests.support.worker_processes import start_worker, stop, wait_for, worker_env
from turngraph.app import build_recall_worker
from turngraph.clients import Clients, producer_consent_endpoint
from turngraph.doctor.smoke import SMOKE_WORKSPACE
from turngraph.embedded import ServiceEndpoints
from turngraph.embedded.process import ServerProcess
from turngraph.embedded.redis_server import server_binary
from turngraph.embedded.services import STATE_FILE
from turngraph.producers.consent import ConsentStore
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.ontology import ONTOLOGY
from turngraph.workers.graph.schema import ensure_schema
from turngraph.workers.recall.replica import read_heartbeats
from turngraph.workers.recall.worker import RecallWorker

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]


def doctor(env: dict[str, str], *args: str) -> tuple[int, str]:
    done = subprocess.run(
        [sys.executable, "-m", "turngraph.cli", "doctor", *args],
        env=env,
        capture_output=True,
        timeout=180,
    )
    output = done.stdout.decode() + done.stderr.decode()
    assert "Traceback" not in output, output
    return done.returncode, done.stdout.decode()


@pytest.fixture
def replica(clients: Clients) -> Iterator[RecallWorker]:
    """A real recall worker in a thread (it publishes its heartbeat)."""
    worker = build_recall_worker(clients)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    assert wait_for(lambda: read_heartbeats(clients.redis), 30)
    assert wait_for(lambda: read_heartbeats(clients.redis)[0].bootstrapped, 30)
    yield worker
    worker.stop()
    thread.join(timeout=15)


def embedded_defaults_env(clients: Clients, embedded: ServiceEndpoints) -> dict[str, str]:
    """No URLs at all: every process finds the running embedded services through
    ``services.json`` in the data folder, as after ``turngraph services`` (with
    ``--graph neo4j`` for the Neo4j tier)."""
    data_dir = clients.settings.data_dir
    data_dir.mkdir(parents=True, exist_ok=True)
    settings = clients.settings  # the Redis of the embedded services; the graph of the test
    assert settings.graph_uri is not None
    state = {
        **dataclasses.asdict(embedded),
        "graph_uri": settings.graph_uri,
        "graph_user": settings.graph_user,
        "graph_password": settings.graph_password.get_secret_value(),
        "graph_database": settings.graph_database,
        "owner_pid": os.getpid(),
    }
    (data_dir / STATE_FILE).write_text(json.dumps(state))
    (data_dir / STATE_FILE).chmod(0o600)
    env = {k: v for k, v in os.environ.items() if not k.startswith("TURNGRAPH_")}
    return {**env, "TURNGRAPH_DATA_DIR": str(data_dir), "TURNGRAPH_LOG_LEVEL": "WARNING"}


def test_doctor_smoke_passes_with_real_workers(
    clients: Clients, embedded: ServiceEndpoints
) -> None:
    env = embedded_defaults_env(clients, embedded)
    ingest = start_worker("ingest", env)
    recall = start_worker("recall", env)
    try:
        assert wait_for(lambda: read_heartbeats(clients.redis), 90), "no recall replica"
        assert wait_for(lambda: read_heartbeats(clients.redis)[0].bootstrapped, 60)
        code, out = doctor(env, "--smoke", "--json")
        text_code, text = doctor(env)
    finally:
        outputs = [stop(ingest), stop(recall)]
    report = json.loads(out)
    statuses = {c["name"]: c["status"] for c in report["checks"]}
    assert code == 0 and report["success"], out
    assert statuses["smoke"] == "ok", out
    print(next(c["detail"] for c in report["checks"] if c["name"] == "smoke"))
    assert {"redis.version", "redis.eviction", "redis.persistence", "redis.auth"} <= set(statuses)
    assert {"graph", "graph.schema", "queue", "ingest.workers", "llm", "embeddings"} <= set(
        statuses
    )
    assert not [name for name, status in statuses.items() if status == "fail"]
    assert text_code == 0 and text.strip().endswith("healthy"), text
    assert all(code == 0 for code, _ in outputs), outputs
    # the marker is gone: forgotten in the graph, consent withdrawn
    records, _, _ = clients.graph.execute_query(
        "MATCH (e:Episode) RETURN count(e) AS n", database_=clients.graph_database
    )
    assert records[0]["n"] == 0
    workspace_id = ScopeHasher.for_data_dir(clients.settings.data_dir).workspace(SMOKE_WORKSPACE)
    endpoint = producer_consent_endpoint(clients.settings)
    assert not ConsentStore(clients.settings.data_dir).is_enabled(workspace_id, endpoint)
    assert workspace_id not in ScopeHints(clients.settings.data_dir).load()["workspaces"]


def test_doctor_says_when_the_workers_use_other_settings(clients: Clients) -> None:
    key = "sk-not-to-be-seen-anywhere"
    env = worker_env(
        clients,
        TURNGRAPH_LLM_BASE_URL=f"http://{_closed()}/v1",
        TURNGRAPH_LLM_MODEL="model-a",
        TURNGRAPH_LLM_API_KEY=key,
        TURNGRAPH_EMBEDDING_PROVIDER="none",
    )
    ingest = start_worker("ingest", env)
    recall = start_worker("recall", env)
    try:
        # both publish: the ingest worker in RQ's worker hash, the replica in its heartbeat
        assert wait_for(lambda: read_heartbeats(clients.redis), 90), "no recall replica"
        assert wait_for(lambda: Worker.all(connection=clients.redis), 90), "no ingest worker"
        same = _worker_config(env)
        other = _worker_config({**env, "TURNGRAPH_LLM_MODEL": "model-b"})
        other_host = _worker_config({**env, "TURNGRAPH_LLM_BASE_URL": f"http://{_closed()}/v1"})
        beats = [b.config for b in read_heartbeats(clients.redis)]
    finally:
        outputs = [stop(ingest), stop(recall)]
    assert same["status"] == "ok" and "2 running workers" in same["detail"], same
    for seen in (other, other_host):
        assert seen["status"] == "warn" and "2 of 2 running workers" in seen["detail"], seen
        assert "restart the workers" in seen["fix"], seen
    assert beats and all(len(b) == 12 for b in beats)  # a hash, not the settings
    for code, output in outputs:
        assert code == 0 and key not in output and "model-a" not in output, output


def _worker_config(env: dict[str, str]) -> dict[str, str]:
    _, out = doctor(env, "--json")
    return dict(next(c for c in json.loads(out)["checks"] if c["name"] == "workers.config"))


def _closed() -> str:
    return f"127.0.0.1:{free_port()}"


def _one_failure(env: dict[str, str], name: str, *words: str) -> str:
    code, out = doctor(env)
    failing = [line for line in out.splitlines() if line.startswith("FAIL")]
    assert code == 1, out
    assert len(failing) == 1, out
    line = failing[0]
    assert line.split()[1] == name, out
    assert "(fix: " in line, line
    for word in words:
        assert word in line, line
    return line


def test_redis_down(clients: Clients, replica: RecallWorker) -> None:
    env = worker_env(clients, TURNGRAPH_REDIS_URL=f"redis://{_closed()}/0")
    _one_failure(env, "redis", "not reachable", "turngraph up")


def test_graph_down(clients: Clients, replica: RecallWorker) -> None:
    env = worker_env(clients, TURNGRAPH_GRAPH_URI=f"bolt://{_closed()}")
    _one_failure(env, "graph", "not reachable", "TURNGRAPH_GRAPH_URI")


def test_no_recall_replica(clients: Clients) -> None:
    # the schema an ingest worker would have made: this test's one failure is the replica
    ensure_schema(clients.graph, clients.graph_database, ONTOLOGY.labels())
    _one_failure(worker_env(clients), "recall.replicas", "turngraph worker recall")


def test_eviction_policy_wrong(clients: Clients, replica: RecallWorker) -> None:
    conn = clients.redis
    conn.config_set("maxmemory-policy", "allkeys-lru")
    try:
        _one_failure(worker_env(clients), "redis.eviction", "allkeys-lru", "noeviction")
    finally:
        conn.config_set("maxmemory-policy", "noeviction")


def test_llm_endpoint_down(clients: Clients, replica: RecallWorker) -> None:
    env = worker_env(clients, TURNGRAPH_LLM_BASE_URL=f"http://{_closed()}/v1")
    _one_failure(env, "llm", "did not answer", "TURNGRAPH_LLM_BASE_URL")


def test_embedding_endpoint_down(clients: Clients, replica: RecallWorker) -> None:
    env = worker_env(
        clients,
        TURNGRAPH_EMBEDDING_PROVIDER="openai",
        TURNGRAPH_EMBEDDING_BASE_URL=f"http://{_closed()}/v1",
    )
    _one_failure(env, "embeddings", "openai", "TURNGRAPH_EMBEDDING_BASE_URL")


def test_redis_without_password_or_persistence(clients: Clients, tmp_path: Path) -> None:
    """A bare Redis (no password, no AOF, no RDB): both are named, each with its fix."""
    port = free_port()
    server = ServerProcess(
        "bare-redis",
        [str(server_binary()), "--bind", "127.0.0.1", "--port", str(port), "--save", "",
         "--appendonly", "no", "--dir", str(tmp_path)],
        tmp_path / "redis.log",
    )  # fmt: skip
    bare = redis.Redis(port=port, socket_timeout=1)
    server.start(lambda: _pings(bare))
    try:
        code, out = doctor(worker_env(clients, TURNGRAPH_REDIS_URL=f"redis://127.0.0.1:{port}/0"))
    finally:
        bare.close()
        server.stop()
    failing = {line.split()[1]: line for line in out.splitlines() if line.startswith("FAIL")}
    assert code == 1
    assert "requirepass" in failing["redis.auth"], out
    assert "appendonly yes" in failing["redis.persistence"], out
    assert "redis.eviction" not in failing  # noeviction is Redis's default


def _pings(conn: redis.Redis) -> bool:
    try:
        return bool(conn.ping())
    except redis.RedisError:
        return False
