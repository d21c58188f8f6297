"""A real Neo4j 5.26 Community server, fetched through Maven, run as a child process.

Started like the embedded ArcadeDB (``graph_server.py``): loopback, free ports, data
under the data folder, the password in a 0600 file, the parent-death signal, ready when
an authenticated query answers; Browser is served at ``/browser/``. The password reaches
Neo4j as its initial-user file (``data/dbms/auth.ini``, as ``neo4j-admin dbms
set-initial-password`` writes it) before the first start.
"""

from __future__ import annotations

import hashlib
import secrets
from pathlib import Path
from urllib.parse import quote, urlencode, urlsplit

import neo4j
import neo4j.exceptions

from turngraph.embedded.graph_server import PASSWORD_FILE, bolt_answers, password_for
from turngraph.embedded.neo4j_fetch import fetch, find_tools
from turngraph.embedded.process import ServerProcess, free_port
from turngraph.producers.private_files import ensure_private_dir, write_private_text
from turngraph.schemas.errors import EmbeddedServiceError

__all__ = [
    "ENTRY_POINT", "HASH_ITERATIONS", "JVM_HEAP", "JVM_OPENS", "NEO4J_DATABASE", "NEO4J_FOLDER",
    "NEO4J_USER", "PAGE_CACHE", "STARTUP_TIMEOUT_S", "Neo4jServer", "browser_login_url",
    "initial_user_line", "neo4j_conf", "password_file",
]  # fmt: skip

NEO4J_USER = "neo4j"
"""Neo4j's initial administrative user."""

NEO4J_DATABASE = "neo4j"
"""Community edition's one user database."""

JVM_HEAP = "768m"
"""Heap of the Neo4j server's JVM (fixed, so start-up does not size it from the machine)."""

PAGE_CACHE = "256m"
"""Neo4j's page cache (off-heap)."""

STARTUP_TIMEOUT_S = 240.0
"""A cold Neo4j on a loaded 2-core machine takes about a minute; its first start longer."""

HASH_ITERATIONS = 1024
"""Neo4j's credential format version 1: SHA-256 iterated 1,024 times over salt + password."""

NEO4J_FOLDER = "neo4j"
"""The embedded Neo4j's folder under the data folder (its data, settings and password)."""

ENTRY_POINT = "org.neo4j.server.CommunityEntryPoint"

# Java modules Neo4j opens reflectively (what its own launcher passes); without them it
# falls back to slower paths and says so in its log.
JVM_OPENS = (
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.io=ALL-UNNAMED",
    "--add-opens=java.base/sun.nio.ch=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
    "--add-opens=java.base/java.util.concurrent=ALL-UNNAMED",
)


def initial_user_line(user: str, password: str) -> str:
    """One line of Neo4j's ``auth.ini``: ``user:SHA-256,<hash>,<salt>,1024:`` (hex)."""
    salt = secrets.token_bytes(32)
    digest = hashlib.sha256(salt + password.encode()).digest()
    for _ in range(HASH_ITERATIONS - 1):
        digest = hashlib.sha256(digest).digest()
    return f"{user}:SHA-256,{digest.hex()},{salt.hex()},{HASH_ITERATIONS}:\n"


def neo4j_conf(home: Path, bolt_port: int, http_port: int) -> str:
    """The server's settings: loopback only, no TLS, no usage report, no query log (the
    query log would hold parameters, which carry chat text)."""
    lines = {
        "server.default_listen_address": "127.0.0.1",
        "server.default_advertised_address": "127.0.0.1",
        "server.bolt.listen_address": f"127.0.0.1:{bolt_port}",
        "server.bolt.advertised_address": f"127.0.0.1:{bolt_port}",
        "server.http.listen_address": f"127.0.0.1:{http_port}",
        "server.http.advertised_address": f"127.0.0.1:{http_port}",
        "server.https.enabled": "false",
        "server.directories.data": str(home / "data"),
        "server.directories.logs": str(home / "logs"),
        "server.directories.plugins": str(home / "plugins"),
        "server.directories.import": str(home / "import"),
        "server.memory.pagecache.size": PAGE_CACHE,
        "dbms.security.auth_enabled": "true",
        "dbms.usage_report.enabled": "false",
        "db.logs.query.enabled": "OFF",
        "db.tx_log.rotation.retention_policy": "2 files",
    }
    return "".join(f"{key}={value}\n" for key, value in lines.items())


def password_file(data_dir: Path) -> Path:
    """The file holding the embedded Neo4j's password for the data folder ``data_dir``."""
    return data_dir / NEO4J_FOLDER / PASSWORD_FILE


def browser_login_url(studio_url: str, graph_uri: str, user: str, database: str) -> str:
    """Neo4j Browser's address with its connection form filled in: the Bolt URL, the user
    and the database (Browser's ``dbms`` and ``db`` URL parameters); only the password is
    left to type (it never goes in a URL)."""
    address = urlsplit(graph_uri).netloc.rpartition("@")[2]
    scheme = urlsplit(graph_uri).scheme or "bolt"
    dbms = f"{scheme}://{quote(user, safe='')}@{address}"
    return f"{studio_url}?{urlencode({'dbms': dbms, 'db': database}, safe=':/@')}"


class Neo4jServer:
    """Neo4j on loopback, data and settings under ``data_dir``; jars in the data folder's
    cache (``cache_root``, fetched on first start)."""

    name = "graph"
    user = NEO4J_USER
    database = NEO4J_DATABASE

    def __init__(self, data_dir: Path, cache_root: Path, bolt_port: int | None = None) -> None:
        self.data_dir = data_dir
        self.cache_root = cache_root
        self.bolt_port = bolt_port or free_port()
        self.http_port = free_port()
        self.password = password_for(data_dir)
        self._process: ServerProcess | None = None

    @property
    def uri(self) -> str:
        return f"bolt://127.0.0.1:{self.bolt_port}"

    @property
    def studio_url(self) -> str:
        """Neo4j Browser, served by the server itself."""
        return f"http://127.0.0.1:{self.http_port}/browser/"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process else None

    def _server_process(self) -> ServerProcess:
        if self._process is None:
            java = find_tools(need_maven=False).java
            lib = fetch(self.cache_root)
            home = self.data_dir.resolve()
            self._process = ServerProcess(
                "graph",
                [
                    str(java),
                    f"-Xms{JVM_HEAP}",
                    f"-Xmx{JVM_HEAP}",
                    "-Djava.awt.headless=true",
                    "-Dfile.encoding=UTF-8",
                    *JVM_OPENS,
                    "-cp",
                    str(lib / "*"),
                    ENTRY_POINT,
                    f"--home-dir={home}",
                    f"--config-dir={home / 'conf'}",
                ],
                self.data_dir / "graph.log",
            )
        return self._process

    def orphans(self) -> list[int]:
        """Servers of this kind left running in this folder by an owner that is gone."""
        try:
            return self._server_process().orphans()
        except EmbeddedServiceError:  # no Java here: none of ours can be running
            return []

    def _write_settings(self) -> None:
        home = self.data_dir.resolve()
        for folder in ("conf", "data", "logs", "plugins", "import"):
            ensure_private_dir(home / folder)
        conf = neo4j_conf(home, self.bolt_port, self.http_port)
        write_private_text(home / "conf" / "neo4j.conf", conf)
        if not (home / "data" / "databases" / "system").exists():
            ensure_private_dir(home / "data" / "dbms")
            write_private_text(
                home / "data" / "dbms" / "auth.ini", initial_user_line(NEO4J_USER, self.password)
            )

    def _ready(self) -> bool:
        try:
            return bolt_answers(
                self.bolt_port, self.http_port, NEO4J_USER, self.password, NEO4J_DATABASE
            )
        except neo4j.exceptions.AuthError:
            raise EmbeddedServiceError(
                f"Neo4j in {self.data_dir} refuses the password in "
                f"{self.data_dir / 'graph.password'}: the data was created with another one; "
                "restore that file, or move the folder away to start afresh"
            ) from None

    def start(self) -> None:
        ensure_private_dir(self.data_dir)
        process = self._server_process()
        self._write_settings()
        process.start(self._ready, timeout_s=STARTUP_TIMEOUT_S)

    def died(self) -> bool:
        """Started, and exited since without a stop (crashed, killed)."""
        return self._process is not None and self._process.died()

    def stop(self) -> None:
        if self._process is not None:
            self._process.stop()

    def kill(self) -> None:
        if self._process is not None:
            self._process.kill()
