"""Shared fixtures: one real Valkey and one real ArcadeDB (Bolt) per test session,
isolated per test by flushing Redis and emptying the graph."""

from __future__ import annotations

import gc
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import pytest
import redis
from pydantic import SecretStr
from xdist.scheduler import LoadFileScheduling

from tests.support.leftovers import MARKER, kill_all, tag_this_run, tagged_processes
from tests.support.neo4j_tier import (
    NEO4J_TIER_SCOPE,
    BackgroundNeo4j,
    Neo4jEndpoint,
    neo4j_param,
    on_the_neo4j_tier,
    unavailable_reason,
)
from turngraph.clients import Clients, build_clients, with_endpoints
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.embedded.class_cache import default_cache_dir
from turngraph.embedded.graph_server import GraphServer
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

JVM_TEST_OPTIONS = "-XX:TieredStopAtLevel=1"
"""Every JVM the run starts (ArcadeDB, Neo4j, Maven; the test session's own and those of
the ``up`` and ``services`` the tests run) compiles with C1 only: the servers are the real
ones, but a test's server lives seconds to minutes, where C2's optimising compiler costs
more CPU than it earns back (ArcadeDB's start, schema and 200 writes: 12 s of CPU -> 6 s;
Neo4j's: 34 s -> 22 s). ``JAVA_TOOL_OPTIONS`` is read by the JVM itself, whoever starts it."""
if JVM_TEST_OPTIONS not in os.environ.get("JAVA_TOOL_OPTIONS", ""):  # xdist workers inherit it
    os.environ["JAVA_TOOL_OPTIONS"] = " ".join(
        filter(None, (os.environ.get("JAVA_TOOL_OPTIONS"), JVM_TEST_OPTIONS))
    )


_SHARED_ENV = "TESTS_SHARED_DIR_OF_TURNGRAPH"
"""A folder the whole run shares, xdist workers included: made by the first process (the
xdist controller, which the workers inherit the variable from) and removed by it."""
_SHARED_OWNER = _SHARED_ENV not in os.environ
if _SHARED_OWNER:
    os.environ[_SHARED_ENV] = tempfile.mkdtemp(prefix="turngraph-tests-shared-")
_SHARED = Path(os.environ[_SHARED_ENV])

os.environ["XDG_CACHE_HOME"] = str(_SHARED / "xdg-cache")
"""The user's cache folder (the graph server's class cache, ``turngraph/embedded/
class_cache.py``) is one for the whole run, never the user's own."""


def pytest_configure(config: pytest.Config) -> None:
    """The first process of the run (the xdist controller, before its workers start) makes
    the graph server's class cache, as a user's first run does: every ArcadeDB the tests
    start then maps it (ready in ~2-3 s instead of ~6-11 s on this machine). The steps
    themselves are tested on a cache folder of their own (``test_graph_class_cache.py``)."""
    if not _SHARED_OWNER or os.environ.get("PYTEST_XDIST_WORKER"):
        return
    unit = Path(__file__).parent / "unit"
    paths = [Path(arg.split("::")[0]).resolve() for arg in config.args] or [Path.cwd()]
    if all(path.is_relative_to(unit) for path in paths):
        return  # unit tests start no graph server: no JVM for them
    warm = _SHARED / "class-cache-warm-up"
    server = GraphServer(warm, class_cache_dir=default_cache_dir())
    server.start()  # records what the JVM loads
    server.stop()
    assert server.class_cache is not None
    server.class_cache.start_options()  # makes the cache of it
    shutil.rmtree(warm, ignore_errors=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    shutil.rmtree(_SANDBOX, ignore_errors=True)
    if _SHARED_OWNER:
        shutil.rmtree(_SHARED, ignore_errors=True)


LEFTOVER_GRACE_S = 10.0
"""How long processes the run started may take to exit once the last test is done."""


@pytest.fixture(autouse=True)
def _unfreeze_after_each_test() -> Iterator[None]:
    """A bootstrapped recall replica freezes its heap out of the cycle collector
    (``feed.keep_long_lived``); in one test process that would keep every earlier test's
    cyclic garbage for the rest of the run."""
    yield
    gc.unfreeze()


@pytest.fixture(scope="session", autouse=True)
def _tag_processes(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Tag every process the run starts, for the leftover check at the end."""
    request.config.stash[_RUN_ID] = tag_this_run()
    request.config.stash[_RUN_FOLDER] = tmp_path_factory.getbasetemp().resolve()


NEO4J_CACHE = _SHARED / "neo4j-cache"
"""Where the run fetches Neo4j's jars (from Maven's own cache after the install step):
once for the whole run, the xdist workers' servers all run on that copy."""

_NEO4J_TIER = pytest.StashKey[BackgroundNeo4j]()
_NEO4J_COLLECTED = pytest.StashKey[bool]()


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """``both_engines`` tests run on the embedded ArcadeDB and on a real Neo4j."""
    if "graph_engine" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("both_engines") is None:
        return
    metafunc.parametrize(
        "graph_engine", [pytest.param("arcadedb", id="arcadedb"), neo4j_param()], indirect=True
    )


class _FilesAndTheNeo4jTier(LoadFileScheduling):
    """``--dist loadfile``, except that the tests on the Neo4j tier's server are one work
    unit: one process boots that server instead of each of the four (a Neo4j start is
    ~20-40 s of CPU, and its JVM ~0.5-1 GB; Community has one user database, so the
    processes cannot share one)."""

    def _split_scope(self, nodeid: str) -> str:
        return NEO4J_TIER_SCOPE if on_the_neo4j_tier(nodeid) else super()._split_scope(nodeid)


def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> LoadFileScheduling | None:
    if config.getvalue("dist") != "loadfile":
        return None
    return _FilesAndTheNeo4jTier(config, log)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests on the Neo4j tier's server first (one work unit under xdist, the longest),
    then the files marked ``heavy(seconds)`` (minutes of ``up`` cycles and JVM starts)
    spread out: longest first, each followed by one file of the others, in the order
    collected; then the rest. ``--dist loadfile`` hands out whole files in this order, so
    about half of the four processes run a heavy file at a time (one per core) while the
    others run lighter ones, and no heavy file is handed out last to run alone at the end.
    (All of them first, four heavy files at once fighting for two cores, made the run
    longer.)"""
    tier = _neo4j_tier_first(items)
    files: dict[Path, list[pytest.Item]] = {}
    for item in items:
        if not on_the_neo4j_tier(item.nodeid):
            files.setdefault(item.path, []).append(item)

    def expected_s(group: list[pytest.Item]) -> float:
        heavy = group[0].get_closest_marker("heavy")
        return float(heavy.args[0]) if heavy is not None else 0.0

    heavy = sorted((g for g in files.values() if expected_s(g)), key=expected_s, reverse=True)
    light = [g for g in files.values() if not expected_s(g)]
    ordered: list[pytest.Item] = list(tier)
    for index, group in enumerate(heavy):
        ordered += group + (light[index] if index < len(light) else [])
    for group in light[len(heavy) :]:
        ordered += group
    items[:] = ordered


def _neo4j_tier_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The tests on the tier's server, in the order collected; a test whose id and marker
    disagree (the scheduler would send it to the wrong process) stops the collection."""
    tier = []
    for item in items:
        marked = item.get_closest_marker("neo4j") is not None
        if marked != on_the_neo4j_tier(item.nodeid):
            raise pytest.UsageError(
                f"{item.nodeid}: a test on the Neo4j tier takes its server through "
                "neo4j_param() (parameter id 'neo4j'), and only those do"
            )
        if marked:
            tier.append(item)
    return tier


def pytest_collection_finish(session: pytest.Session) -> None:
    """Note the Neo4j tier's tests; outside xdist, boot the server beside the first tests
    (under xdist, the one process that is handed the tier's tests boots it at the first)."""
    neo4j_items = [item for item in session.items if item.get_closest_marker("neo4j")]
    session.config.stash[_NEO4J_COLLECTED] = bool(neo4j_items)
    runnable = any(item.get_closest_marker("skip") is None for item in neo4j_items)
    if runnable and not os.environ.get("PYTEST_XDIST_WORKER"):
        _boot_neo4j_tier(session.config)


def _boot_neo4j_tier(config: pytest.Config) -> BackgroundNeo4j:
    tier = config.stash.get(_NEO4J_TIER, None)
    if tier is None:
        tier = BackgroundNeo4j(_SANDBOX / "neo4j", cache_root=NEO4J_CACHE)
        tier.start()
        config.stash[_NEO4J_TIER] = tier
    return tier


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """The one line saying the Neo4j tier did not run, and why."""
    if not terminalreporter.config.stash.get(_NEO4J_COLLECTED, False):
        return
    reason = unavailable_reason()
    if reason:
        terminalreporter.write_line(f"Neo4j tier skipped: {reason}", yellow=True)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a process it started outlived it (session fixtures are torn down)."""
    tier = session.config.stash.get(_NEO4J_TIER, None)
    if tier is not None:
        tier.stop()
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
def graph_engine(request: pytest.FixtureRequest) -> str:
    """The graph engine of this test: ``arcadedb``, or each of both for ``both_engines``."""
    return str(getattr(request, "param", "arcadedb"))


@pytest.fixture(scope="session")
def neo4j_endpoint(request: pytest.FixtureRequest) -> Neo4jEndpoint:
    """The run's real Neo4j server (booted at collection, or under xdist by the first test
    that asks; waits until it answers)."""
    reason = unavailable_reason()
    if reason:
        pytest.skip(f"Neo4j tier skipped: {reason}")
    return _boot_neo4j_tier(request.config).endpoint()


@pytest.fixture
def settings(
    embedded: ServiceEndpoints, graph_engine: str, tmp_path: Path, request: pytest.FixtureRequest
) -> Settings:
    base = Settings(_env_file=None, data_dir=tmp_path / "data", log_format=LogFormat.JSON)
    configured = with_endpoints(base, embedded)
    if graph_engine != "neo4j":
        return configured
    neo4j_at: Neo4jEndpoint = request.getfixturevalue("neo4j_endpoint")
    return configured.model_copy(
        update={
            "graph_uri": neo4j_at.uri,
            "graph_user": neo4j_at.user,
            "graph_password": SecretStr(neo4j_at.password),
            "graph_database": neo4j_at.database,
        }
    )


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
