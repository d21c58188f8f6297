"""What ``bench.hooks`` and ``bench.cli`` start before they time a command: the embedded
services, a few memories stored for a project folder, a recall worker answering in this
process, and the environment of a command as a person's shell runs it.

That environment drops ``PYTHONDONTWRITEBYTECODE``: an installed package has its
bytecode compiled (pip does it at install; an editable install writes it on the first
run), and a command that compiles every module of the package from source on each run
measures the machine's compiler, not the command.
"""

from __future__ import annotations

import getpass
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from turngraph.app import build_pipeline, build_recall_worker
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.turn_event import ClientInfo, TurnEvent
from turngraph.settings import LogFormat, Settings
from turngraph.workers.extraction.offline import OfflineExtractor

__all__ = ["Seeded", "command_env", "seeded_services"]


@dataclass(frozen=True)
class Seeded:
    """The running services and what a timed command needs of them."""

    settings: Settings
    clients: Clients
    hasher: ScopeHasher
    workspace: str
    """The project folder's hashed workspace key."""
    user: str
    """This user's hashed key."""
    env: dict[str, str]
    """:func:`command_env` for these services."""


def command_env(settings: Settings) -> dict[str, str]:
    """This process's environment for a command on ``settings``' services: no other
    ``TURNGRAPH_*`` setting, and bytecode written and read as an installed package has it."""
    kept = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("TURNGRAPH_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    return {
        **kept,
        "TURNGRAPH_DATA_DIR": str(settings.data_dir),
        "TURNGRAPH_REDIS_URL": str(settings.redis_url),
        "TURNGRAPH_GRAPH_URI": str(settings.graph_uri),
    }


@contextmanager
def seeded_services(tmp: Path, project: Path, memories: list[str]) -> Iterator[Seeded]:
    """Embedded services under ``tmp``, ``memories`` stored a day ago as turns of an
    earlier session in ``project``, a recall worker answering; all stopped on exit."""
    with EmbeddedServices(tmp / "services") as endpoints:
        base = Settings(_env_file=None, data_dir=tmp / "data", log_format=LogFormat.JSON)
        settings = with_endpoints(base, endpoints)
        clients = build_clients(settings)
        hasher = ScopeHasher.for_data_dir(settings.data_dir)
        workspace = hasher.workspace(str(project.resolve()))
        user = hasher.user(getpass.getuser())
        t0 = datetime.now(UTC) - timedelta(days=1)
        build_pipeline(clients, extractor=OfflineExtractor()).ingest([
            TurnEvent(session_id=hasher.session("earlier"), workspace=workspace, user=user,
                      turn_index=i, role="user", content=text,
                      occurred_at=t0 + timedelta(minutes=i),
                      client=ClientInfo(name="bench", version="1"))
            for i, text in enumerate(memories)
        ])  # fmt: skip
        recall = build_recall_worker(clients)
        recall.bootstrap()
        thread = threading.Thread(target=recall.run, daemon=True)
        thread.start()
        try:
            yield Seeded(settings, clients, hasher, workspace, user, command_env(settings))
        finally:
            recall.stop()
            thread.join(timeout=10)
            clients.close()
