"""``bench.hooks``' endpoint side: ``turngraph endpoint`` started and stopped as a process,
a hook POSTed as Claude Code's ``http`` hooks do, a data folder naming a stopped endpoint."""

from __future__ import annotations

import http.client
import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

from turngraph.producers.hooks.editors import HttpTarget

__all__ = [
    "endpoint_down_dir",
    "post_hook",
    "start_endpoint",
    "start_maintenance",
    "stop_endpoint",
]


def start_maintenance(env: dict[str, str]) -> subprocess.Popen[bytes]:
    """``turngraph worker maintenance``, as ``turngraph up`` runs it: it answers the session
    start's recap (without it the recap waits its whole deadline, four hook deadlines)."""
    return subprocess.Popen(
        [sys.executable, "-m", "turngraph.cli", "worker", "maintenance"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def start_endpoint(env: dict[str, str], data_dir: Path) -> subprocess.Popen[bytes]:
    """``turngraph endpoint`` on the bench's services, once it has written endpoint.json
    and answers its health check."""
    (data_dir / "endpoint.json").unlink(missing_ok=True)
    process = subprocess.Popen(
        [sys.executable, "-m", "turngraph", "endpoint"], env=env,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"turngraph endpoint exited: {process.stderr.read()[-800:]!r}")  # type: ignore[union-attr]
        try:
            url = json.loads((data_dir / "endpoint.json").read_text())["url"]
            parts = urlsplit(url)
            conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=5)
            conn.request("GET", "/v1/health")
            if conn.getresponse().status == 200:
                conn.close()
                return process
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.2)  # polling another process's start-up
    process.kill()
    raise RuntimeError("turngraph endpoint did not come up within 180 s")


def stop_endpoint(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM, then wait (killed after 30 s); nothing when it has already stopped."""
    if process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate(timeout=10)


def post_hook(target: HttpTarget, event: str, payload: bytes) -> tuple[float, bytes]:
    """One hook POSTed on a new connection, as Claude Code's http hooks make it: ms to the
    reply's last byte, and the body ("" when refused: Claude Code goes on without it)."""
    parts = urlsplit(target.url)
    started = time.perf_counter()
    conn = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=10)
    try:
        conn.request(
            "POST", f"/v1/hooks/claude-code/{event}", body=payload,
            headers={"Authorization": f"Bearer {target.token}",
                     "Content-Type": "application/json"},
        )  # fmt: skip
        body = conn.getresponse().read()
    except ConnectionRefusedError:
        body = b""
    finally:
        conn.close()
    elapsed = (time.perf_counter() - started) * 1000
    return elapsed, b"" if body.strip() == b"{}" else body


def endpoint_down_dir(
    folder: Path, target: HttpTarget, closed_port: int
) -> tuple[Path, HttpTarget]:
    """A data folder whose endpoint.json names a port nothing listens on (an endpoint that
    died without removing it: the forwarder's worst case), and that endpoint's target."""
    folder.mkdir(parents=True, exist_ok=True)
    url = f"http://127.0.0.1:{closed_port}"
    (folder / "endpoint.json").write_text(json.dumps({"schema_version": 1, "url": url, "pid": 0}))
    (folder / "endpoint.token").write_text(target.token)
    return folder, HttpTarget(url, target.token)
