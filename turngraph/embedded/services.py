"""Start both embedded servers and publish where they listen, for the other processes."""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from schemas.errors import EmbeddedServiceError
from turngraph.embedded.graph_server import GRAPH_DATABASE, GRAPH_USER, GraphServer
from turngraph.embedded.redis_server import RedisServer

STATE_FILE = "services.json"
"""File under the data folder naming the running embedded services' endpoints."""


@dataclass(frozen=True)
class ServiceEndpoints:
    redis_url: str
    graph_uri: str
    graph_user: str
    graph_password: str
    graph_database: str
    studio_url: str
    owner_pid: int

    def as_env(self) -> dict[str, str]:
        """Environment for child processes, so they skip the state file."""
        return {
            "TURNGRAPH_REDIS_URL": self.redis_url,
            "TURNGRAPH_GRAPH_URI": self.graph_uri,
            "TURNGRAPH_GRAPH_USER": self.graph_user,
            "TURNGRAPH_GRAPH_PASSWORD": self.graph_password,
            "TURNGRAPH_GRAPH_DATABASE": self.graph_database,
        }


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def read_endpoints(data_dir: Path) -> ServiceEndpoints | None:
    """The endpoints of embedded services started by a live process, if any."""
    path = data_dir / STATE_FILE
    try:
        endpoints = ServiceEndpoints(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None
    return endpoints if _alive(endpoints.owner_pid) else None


def wait_for_endpoints(data_dir: Path, timeout_s: float) -> ServiceEndpoints:
    """For Procfile processes started beside ``turngraph services``."""
    deadline = time.monotonic() + timeout_s
    while True:
        endpoints = read_endpoints(data_dir)
        if endpoints is not None:
            return endpoints
        if time.monotonic() > deadline:
            raise EmbeddedServiceError(
                f"no embedded services running for {data_dir}: start `turngraph services` "
                "or set TURNGRAPH_REDIS_URL and TURNGRAPH_GRAPH_URI"
            )
        time.sleep(0.2)  # waiting for another process to come up


class EmbeddedServices:
    """Both servers, under one data folder; a context manager that always stops them."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.redis = RedisServer(data_dir / "redis")
        self.graph = GraphServer(data_dir / "graph")
        self._state_path = data_dir / STATE_FILE

    @property
    def endpoints(self) -> ServiceEndpoints:
        return ServiceEndpoints(
            redis_url=self.redis.url,
            graph_uri=self.graph.uri,
            graph_user=GRAPH_USER,
            graph_password=self.graph.password,
            graph_database=GRAPH_DATABASE,
            studio_url=self.graph.studio_url,
            owner_pid=os.getpid(),
        )

    def start(self) -> ServiceEndpoints:
        running = read_endpoints(self.data_dir)
        if running is not None:
            raise EmbeddedServiceError(
                f"embedded services for {self.data_dir} already run in process {running.owner_pid}"
            )
        self.redis.start()
        try:
            self.graph.start()
        except BaseException:
            self.redis.stop()
            raise
        self._state_path.write_text(json.dumps(asdict(self.endpoints)))
        self._state_path.chmod(0o600)
        return self.endpoints

    def stop(self) -> None:
        self._state_path.unlink(missing_ok=True)
        try:
            self.graph.stop()
        finally:
            self.redis.stop()

    def __enter__(self) -> ServiceEndpoints:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
