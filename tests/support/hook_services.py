"""The services an editor-hook test runs against, started once per module: the test's
Redis flushed and graph wiped, a real ``turngraph worker ingest`` process, a recall worker
in this process, a maintenance worker process (recaps, summaries), and the environment
that points spawned hooks at them."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path

import redis

from tests.conftest import wipe_graph
from tests.support.maintenance import maintenance_worker, service_env
from tests.support.worker_processes import start_worker, stop
from turngraph.app import build_recall_worker
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import ServiceEndpoints
from turngraph.settings import LogFormat, Settings

__all__ = ["HOOK_DEADLINE_MS", "HookServices", "hook_services"]

HOOK_DEADLINE_MS = "9000"
"""The prompt hook's deadline counts from its interpreter's start: at load 13-20 on 2 cores
that start alone passed 750 ms (recall_skipped in 5 runs of 9). 9 s, the editors' 10 s
timeout less 0.5 s, tests what the hooks answer; their speed is bench.hooks'."""


@dataclass(frozen=True)
class HookServices:
    settings: Settings
    clients: Clients
    conn: redis.Redis
    env: dict[str, str]
    """:func:`service_env` with the hook deadline (and ``HOME`` when one was given)."""


@contextmanager
def hook_services(
    embedded: ServiceEndpoints, root: Path, *, home: Path | None = None, maintenance: bool = True
) -> Iterator[HookServices]:
    """The services, their data folder ``root / "data"``; all stopped when the block ends."""
    base = Settings(_env_file=None, data_dir=root / "data", log_format=LogFormat.JSON)
    settings = with_endpoints(base, embedded)
    clients = build_clients(settings)
    assert settings.redis_url
    conn = redis.Redis.from_url(settings.redis_url)
    conn.flushdb()
    wipe_graph(clients.graph, clients.graph_database)
    extra = {"HOME": str(home)} if home is not None else {}
    env = service_env(settings, TURNGRAPH_HOOK_DEADLINE_MS=HOOK_DEADLINE_MS, **extra)
    ingest = start_worker("ingest", env)
    recall = build_recall_worker(clients)
    recall.bootstrap()
    thread = threading.Thread(target=recall.run, daemon=True)
    thread.start()
    try:
        with maintenance_worker(env) if maintenance else nullcontext():
            yield HookServices(settings, clients, conn, env)
    finally:
        recall.stop()
        thread.join(timeout=10)
        stop(ingest)
        clients.close()
        conn.close()
