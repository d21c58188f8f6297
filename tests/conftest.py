"""Shared fixtures: one real Valkey and one real ArcadeDB (Bolt) per test session,
isolated per test by flushing Redis and emptying the graph."""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest
import redis

from tests.support.leftovers import MARKER, kill_all, tag_this_run, tagged_processes
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.settings import LogFormat, Settings

# Tests never touch the user's own data folder: before any test (or anything a test
# starts, which inherits this environment) reads a setting, the data folder and the
# platform's user data directory both point into a throw-away folder.
_SANDBOX = Path(tempfile.mkdtemp(prefix="turngraph-tests-"))
TEST_DATA_DIR = _SANDBOX / "data"
"""``TURNGRAPH_DATA_DIR`` for every test and every process a test starts."""
TEST_XDG_DATA_HOME = _SANDBOX / "xdg-data"
"""Where the default data folder (``platformdirs``) lands when a test unsets the variable."""
os.environ["TURNGRAPH_DATA_DIR"] = str(TEST_DATA_DIR)
os.environ["XDG_DATA_HOME"] = str(TEST_XDG_DATA_HOME)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SANDBOX, ignore_errors=True)


LEFTOVER_GRACE_S = 10.0
"""How long processes the run started may take to exit once the last test is done."""


@pytest.fixture(scope="session", autouse=True)
def _tag_processes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tag every process the run starts, for the leftover check at the end."""
    request.config.stash[_RUN_ID] = tag_this_run()
    request.config.stash[_RUN_FOLDER] = tmp_path_factory.getbasetemp().resolve()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a process it started outlived it (session fixtures are torn down)."""
    run_id = session.config.stash.get(_RUN_ID, None)
    if run_id is None:
        return
    ours = {os.getpid(), *_helpers_that_end_with_us()}
    folders = (session.config.stash[_RUN_FOLDER], _SANDBOX.resolve())
    deadline = time.monotonic() + LEFTOVER_GRACE_S
    leftovers = tagged_processes(run_id, exclude=ours, folders=folders)
    while leftovers and time.monotonic() < deadline:
        time.sleep(0.2)  # polling other processes' exit
        leftovers = tagged_processes(run_id, exclude=ours, folders=folders)
    if not leftovers:
        return
    kill_all(set(leftovers))
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    lines = [f"  {pid}: {cmd[:200]}" for pid, cmd in sorted(leftovers.items())]
    message = "processes started by the tests outlived them (now killed):\n" + "\n".join(lines)
    if reporter is not None:
        reporter.write_line(message, red=True)
    session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _helpers_that_end_with_us() -> set[int]:
    """Our own children that exit when this process does (multiprocessing's resource
    tracker waits for its pipe to close): not leftovers."""
    helpers = set()
    for child in tagged_processes(os.environ.get(MARKER, ""), exclude=set()).items():
        pid, cmd = child
        if "multiprocessing.resource_tracker" in cmd and _parent(pid) == os.getpid():
            helpers.add(pid)
    return helpers


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, ValueError, IndexError):
        return None


_RUN_ID = pytest.StashKey[str]()
_RUN_FOLDER = pytest.StashKey[Path]()


@pytest.fixture(scope="session")
def embedded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceEndpoints]:
    services = EmbeddedServices(Path(tmp_path_factory.mktemp("embedded")))
    with services as endpoints:
        yield endpoints


@pytest.fixture(scope="session")
def embedded_services(embedded: ServiceEndpoints, request: pytest.FixtureRequest) -> None:
    """Marker fixture for tests that only need the services up."""


@pytest.fixture
def settings(embedded: ServiceEndpoints, tmp_path: Path) -> Settings:
    base = Settings(_env_file=None, data_dir=tmp_path / "data", log_format=LogFormat.JSON)
    return with_endpoints(base, embedded)


@pytest.fixture
def redis_conn(settings: Settings) -> Iterator[redis.Redis]:
    assert settings.redis_url
    conn = redis.Redis.from_url(settings.redis_url)
    conn.flushdb()
    yield conn
    conn.close()


def wipe_graph(driver: neo4j.Driver, database: str | None) -> None:
    driver.execute_query("MATCH (n) DETACH DELETE n", database_=database)


@pytest.fixture
def clients(settings: Settings, redis_conn: redis.Redis) -> Iterator[Clients]:
    built = build_clients(settings)
    wipe_graph(built.graph, built.graph_database)
    yield built
    built.close()
