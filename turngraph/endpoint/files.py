"""Where the endpoint listens and the token that opens it, in the data folder.

``endpoint.json`` (``{"schema_version": 1, "url": ..., "pid": ...}``) is written by the
server once it listens and removed on a clean stop; ``endpoint.token`` is made once and
kept. Both are mode 600 in the private data folder. Reading them imports nothing beyond
``json`` and ``pathlib``: the CLI's fast path reads them before deciding to load
anything else.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = [
    "ENDPOINT_FILE", "PORT_FILE", "SCHEMA_VERSION", "TOKEN_FILE", "LiveEndpoint", "data_dir",
    "ensure_token", "read_live", "remembered_port", "remove_endpoint", "write_endpoint",
]  # fmt: skip

ENDPOINT_FILE = "endpoint.json"
TOKEN_FILE = "endpoint.token"
PORT_FILE = "endpoint.port"
"""The port the endpoint last listened on, kept across stops: the next start takes it
again when it is free, so an editor's http hook URL stays right across restarts."""
SCHEMA_VERSION = 1


class LiveEndpoint:
    """A running endpoint: its base URL, the token it wants, its process (a plain class:
    ``dataclasses`` imports ``inspect``, a third of the fast path's own imports)."""

    __slots__ = ("pid", "token", "url")

    def __init__(self, url: str, token: str, pid: int) -> None:
        self.url = url
        self.token = token
        self.pid = pid


def data_dir() -> Path:
    """The data folder as ``turngraph.settings.Settings`` finds it, without building the
    settings: ``TURNGRAPH_DATA_DIR`` from the environment, else from a ``.env`` file here,
    else the platform's user data folder."""
    configured = os.environ.get("TURNGRAPH_DATA_DIR") or _dotenv_value("TURNGRAPH_DATA_DIR")
    if configured:
        return Path(configured).expanduser().absolute()
    import platformdirs

    return Path(platformdirs.user_data_dir("turngraph", appauthor=False))


def _dotenv_value(name: str) -> str | None:
    """``name``'s value in ``./.env`` (``NAME=value``, optionally quoted or exported)."""
    try:
        lines = Path(".env").read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    found = None
    for line in lines:
        key, sep, value = line.strip().removeprefix("export ").partition("=")
        if sep and key.strip() == name:
            found = value.strip().strip("\"'")
    return found


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except PermissionError:
        return True  # someone else's: alive
    except (OSError, OverflowError):
        return False
    return True


def read_live(folder: Path) -> LiveEndpoint | None:
    """The endpoint ``folder``'s ``endpoint.json`` names, if its process is alive and the
    token is readable; None otherwise (never raises)."""
    try:
        named = json.loads((folder / ENDPOINT_FILE).read_text(encoding="utf-8"))
        url, pid = named["url"], int(named["pid"])
        if named.get("schema_version") != SCHEMA_VERSION or not isinstance(url, str):
            return None
        token = (folder / TOKEN_FILE).read_text(encoding="ascii").strip()
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None
    if not token or not _pid_alive(pid):
        return None
    return LiveEndpoint(url=url, token=token, pid=pid)


def ensure_token(folder: Path) -> str:
    """The endpoint's token, made once (mode 600 in the private data folder)."""
    import secrets

    from turngraph.producers.private_files import ensure_private_dir, write_private_text

    ensure_private_dir(folder)
    path = folder / TOKEN_FILE
    try:
        token = path.read_text(encoding="ascii").strip()
    except FileNotFoundError:
        token = ""
    if token:
        if path.stat().st_mode & 0o777 != 0o600:
            path.chmod(0o600)
        return token
    write_private_text(path, secrets.token_urlsafe(32) + "\n")
    return path.read_text(encoding="ascii").strip()


def remembered_port(folder: Path) -> int | None:
    """The port the endpoint of ``folder`` last listened on, if any."""
    try:
        port = int((folder / PORT_FILE).read_text(encoding="ascii").strip())
    except (OSError, ValueError):
        return None
    return port if 0 < port < 65536 else None


def write_endpoint(folder: Path, url: str, pid: int, port: int) -> None:
    """Name the running endpoint (``endpoint.json``) and remember its port, mode 600."""
    from turngraph.producers.private_files import write_private_text

    text = json.dumps({"schema_version": SCHEMA_VERSION, "url": url, "pid": pid})
    write_private_text(folder / PORT_FILE, f"{port}\n")
    write_private_text(folder / ENDPOINT_FILE, text + "\n")


def remove_endpoint(folder: Path, pid: int) -> None:
    """Remove ``endpoint.json`` if it still names ``pid`` (a newer endpoint keeps its own)."""
    path = folder / ENDPOINT_FILE
    try:
        if int(json.loads(path.read_text(encoding="utf-8"))["pid"]) == pid:
            path.unlink()
    except (OSError, ValueError, TypeError, KeyError):
        pass
