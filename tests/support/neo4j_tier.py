"""The Neo4j tier: one real Neo4j 5.26 server per test process (each xdist worker).

Tests marked ``both_engines`` run twice, on the embedded ArcadeDB and on Neo4j (the
``graph_engine`` parameter). The Neo4j server is fetched (Maven, once per run into a
folder the xdist workers share) and started in a thread as soon as collection shows a
Neo4j test, so its minute of start-up overlaps the ArcadeDB tests; the first Neo4j test
waits for it. The thread lives until the run ends: the kernel's parent-death signal
fires when the thread that started a child ends, so the thread that starts the server is
the one that stops it.

Where Java 17+ or Maven is missing, the tier is skipped and the run says so in one line.
"""

from __future__ import annotations

import fcntl
import functools
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from turngraph.embedded import neo4j_fetch
from turngraph.embedded.neo4j_server import Neo4jServer

ENGINES = ("arcadedb", "neo4j")
"""The graph engines a ``both_engines`` test runs on."""

READY_TIMEOUT_S = 600.0
"""How long the first Neo4j test waits for the fetch and the start (cold Maven cache)."""


@functools.cache
def unavailable_reason() -> str | None:
    """Why the Neo4j tier cannot run on this machine (asked once per run), or None. The
    run fetches into its own sandbox, so Maven is needed as well as Java."""
    try:
        neo4j_fetch.find_tools(need_maven=True)
    except neo4j_fetch.Neo4jUnavailableError as exc:
        return str(exc)
    return None


def neo4j_param(value: Any = "neo4j") -> Any:
    """A test parameter that runs on the tier's Neo4j: marked ``neo4j`` (the run boots the
    server when one is collected), skipped with the reason where the tier cannot run."""
    reason = unavailable_reason()
    marks = [pytest.mark.neo4j]
    if reason:
        marks.append(pytest.mark.skip(reason=f"Neo4j tier skipped: {reason}"))
    return pytest.param(value, marks=marks, id="neo4j")


NEO4J_TIER_SCOPE = "neo4j-tier"
"""The one xdist work unit holding every test on the Neo4j tier's server."""


def on_the_neo4j_tier(nodeid: str) -> bool:
    """Whether a collected test runs on the tier's Neo4j: its parameter id names ``neo4j``
    (``neo4j_param``), alone or joined to others' (``[neo4j]``, ``[neo4j-mixed]``). The
    xdist controller schedules by test ids only, without markers; the collection checks
    that this agrees with the ``neo4j`` marker of every test (``tests/conftest.py``)."""
    if not nodeid.endswith("]") or "[" not in nodeid:
        return False
    return "neo4j" in nodeid[nodeid.rindex("[") + 1 : -1].split("-")


def fetch_once(cache_root: Path) -> None:
    """Fetch the jars into ``cache_root`` unless there already: the xdist workers of a run
    share the folder, the first one fetches while the others wait on the lock."""
    cache_root.mkdir(parents=True, exist_ok=True)
    with (cache_root / "fetch.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        neo4j_fetch.fetch(cache_root)


@dataclass(frozen=True)
class Neo4jEndpoint:
    uri: str
    user: str
    password: str
    database: str
    browser_url: str


class BackgroundNeo4j:
    """A Neo4j server started and stopped by one thread of its own."""

    def __init__(self, data_dir: Path, cache_root: Path) -> None:
        self._server = Neo4jServer(data_dir, cache_root=cache_root)
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="neo4j-tier", daemon=False)

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        try:
            fetch_once(self._server.cache_root)
            self._server.start()
        except BaseException as exc:  # reported to the tests that wait for it
            self._error = exc
            self._ready.set()
            return
        self._ready.set()
        self._stop.wait()
        self._server.stop()

    def endpoint(self) -> Neo4jEndpoint:
        """Waits for the server; raises what stopped it from starting."""
        if not self._ready.wait(READY_TIMEOUT_S):
            raise TimeoutError(f"Neo4j not ready after {READY_TIMEOUT_S:.0f}s")
        if self._error is not None:
            raise RuntimeError(f"Neo4j did not start: {self._error}") from self._error
        server = self._server
        return Neo4jEndpoint(
            server.uri, server.user, server.password, server.database, server.studio_url
        )

    @property
    def server(self) -> Neo4jServer:
        return self._server

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
