"""Start both embedded servers and publish where they listen, for the other processes.

One owner per data folder holds a lock on ``services.lock`` while it runs and clears what
a dead owner left; it starts the servers on the ports (and Redis password) the last
``services.json`` named where they are free, so running clients reconnect, and restarts
a server that died (``turngraph.supervisor``). docs/architecture.md ("Runtime wiring").
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import get_args
from urllib.parse import urlsplit

import psutil
import structlog

from turngraph.embedded.graph_server import GraphServer
from turngraph.embedded.neo4j_server import NEO4J_FOLDER, Neo4jServer
from turngraph.embedded.process import end_processes, port_free
from turngraph.embedded.redis_server import RedisServer
from turngraph.lifecycle import raise_if_stopping
from turngraph.producers.private_files import (
    PRIVATE_FILE_MODE,
    ensure_private_dir,
    write_private_text,
)
from turngraph.schemas.defaults import GraphEngine
from turngraph.schemas.errors import EmbeddedServiceError

__all__ = [
    "GRAPH_ENGINES", "LOCK_FILE", "STATE_FILE", "EmbeddedServices", "ServiceEndpoints",
    "read_endpoints", "wait_for_endpoints",
]  # fmt: skip

log = structlog.get_logger(__name__)

STATE_FILE = "services.json"
"""File under the data folder naming the running embedded services' endpoints."""

LOCK_FILE = "services.lock"
"""Held (``flock``) by the process that owns the data folder's servers; holds its pid."""


@dataclass(frozen=True)
class ServiceEndpoints:
    redis_url: str
    graph_uri: str
    graph_user: str
    graph_password: str
    graph_database: str
    studio_url: str
    owner_pid: int
    graph_engine: str = "arcadedb"

    def as_env(self) -> dict[str, str]:
        """Environment for child processes, so they skip the state file."""
        return {
            "TURNGRAPH_REDIS_URL": self.redis_url,
            "TURNGRAPH_GRAPH_URI": self.graph_uri,
            "TURNGRAPH_GRAPH_USER": self.graph_user,
            "TURNGRAPH_GRAPH_PASSWORD": self.graph_password,
            "TURNGRAPH_GRAPH_DATABASE": self.graph_database,
        }


def _read_state(path: Path) -> ServiceEndpoints | None:
    try:
        return ServiceEndpoints(**json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def read_endpoints(data_dir: Path) -> ServiceEndpoints | None:
    """The endpoints of embedded services started by a live process, if any."""
    endpoints = _read_state(data_dir / STATE_FILE)
    return endpoints if endpoints is not None and psutil.pid_exists(endpoints.owner_pid) else None


def wait_for_endpoints(data_dir: Path, timeout_s: float) -> ServiceEndpoints:
    """For Procfile processes started beside ``turngraph services``: says once that it
    waits (a worker started alone otherwise printed nothing for ``timeout_s``)."""
    deadline = time.monotonic() + timeout_s
    said = False
    while True:
        endpoints = read_endpoints(data_dir)
        if endpoints is not None:
            return endpoints
        if not said and timeout_s > 0:
            log.info(
                "waiting_for_embedded_services",
                data_dir=str(data_dir),
                timeout_s=timeout_s,
                fix="start `turngraph services` (or `turngraph up`) with this data folder, "
                "or set TURNGRAPH_REDIS_URL and TURNGRAPH_GRAPH_URI",
            )
            said = True
        if time.monotonic() > deadline:
            raise EmbeddedServiceError(
                f"no embedded services running for {data_dir}: start `turngraph services` "
                "or set TURNGRAPH_REDIS_URL and TURNGRAPH_GRAPH_URI"
            )
        raise_if_stopping()
        time.sleep(0.2)  # waiting for another process to come up


GRAPH_ENGINES: tuple[str, ...] = get_args(GraphEngine)
"""The names of :data:`schemas.defaults.GraphEngine`, for the command line."""


class EmbeddedServices:
    """Both servers, under one data folder; a context manager that always stops them."""

    def __init__(self, data_dir: Path, graph_engine: str = "arcadedb") -> None:
        if graph_engine not in GRAPH_ENGINES:
            raise EmbeddedServiceError(
                f"unknown graph engine {graph_engine!r}: choose one of {', '.join(GRAPH_ENGINES)}"
            )
        self.data_dir = data_dir
        self.graph_engine = graph_engine
        self.redis = RedisServer(data_dir / "redis")
        self.graph: GraphServer | Neo4jServer = (
            Neo4jServer(data_dir / NEO4J_FOLDER, cache_root=data_dir)
            if graph_engine == "neo4j"
            else GraphServer(data_dir / "graph")
        )
        self._state_path = data_dir / STATE_FILE
        self._lock_fd: int | None = None

    @property
    def endpoints(self) -> ServiceEndpoints:
        return ServiceEndpoints(
            redis_url=self.redis.url,
            graph_uri=self.graph.uri,
            graph_user=self.graph.user,
            graph_password=self.graph.password,
            graph_database=self.graph.database,
            studio_url=self.graph.studio_url,
            owner_pid=os.getpid(),
            graph_engine=self.graph_engine,
        )

    def start(self) -> ServiceEndpoints:
        ensure_private_dir(self.data_dir)
        self._lock_fd = self._take_lock()
        try:
            previous = _read_state(self._state_path)
            self._clear_leftovers()
            if previous is not None:
                self._reuse(previous)
            self.redis.start()
            try:
                self.graph.start()
            except BaseException:
                self.redis.stop()
                raise
            write_private_text(self._state_path, json.dumps(asdict(self.endpoints)))
        except BaseException:
            self._release_lock()
            raise
        return self.endpoints

    def stop(self) -> None:
        self._state_path.unlink(missing_ok=True)
        try:
            self.graph.stop()
        finally:
            self.redis.stop()
            self._release_lock()

    @property
    def servers(self) -> list[RedisServer | GraphServer | Neo4jServer]:
        """The servers, for a :class:`~turngraph.supervisor.Supervisor` to keep running."""
        return [self.redis, self.graph]

    def _reuse(self, previous: ServiceEndpoints) -> None:
        """The previous owner's ports and Redis password, where the ports are free."""
        redis_url = urlsplit(previous.redis_url)
        if redis_url.port and redis_url.password and port_free(redis_url.port):
            self.redis.port, self.redis.password = redis_url.port, redis_url.password
        bolt, http = urlsplit(previous.graph_uri).port, urlsplit(previous.studio_url).port
        same_engine = previous.graph_engine == self.graph_engine
        if same_engine and bolt and http and bolt != http and port_free(bolt) and port_free(http):
            self.graph.bolt_port, self.graph.http_port = bolt, http
        log.info(
            "embedded_endpoints_reused",
            redis=self.redis.port == redis_url.port,
            graph=self.graph.bolt_port == bolt,
        )

    def _take_lock(self) -> int:
        fd = os.open(self.data_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT, PRIVATE_FILE_MODE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 32).decode(errors="replace").strip() or "another process"
            os.close(fd)
            raise EmbeddedServiceError(
                f"embedded services for {self.data_dir} already run in process {holder}: "
                f"use them, stop that process (kill {holder}), or set TURNGRAPH_DATA_DIR "
                "to another folder"
            ) from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return fd

    def _release_lock(self) -> None:
        fd, self._lock_fd = self._lock_fd, None
        if fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, 0)
            os.close(fd)  # closing drops the flock

    def _clear_leftovers(self) -> None:
        """We hold the lock, so the previous owner is gone: its endpoints file is stale
        and a server still running in the folder is an orphan (it would keep the
        database locked)."""
        if self._state_path.exists():
            log.warning("embedded_stale_state_removed", path=str(self._state_path))
            self._state_path.unlink(missing_ok=True)
        for server in (self.redis, self.graph):
            orphans = server.orphans()
            if orphans:
                log.warning("embedded_orphan_stopping", server=server.name, pids=orphans)
                end_processes(orphans)

    def __enter__(self) -> ServiceEndpoints:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
