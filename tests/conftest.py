"""Shared fixtures: one real Valkey and one real ArcadeDB (Bolt) per test session,
isolated per test by flushing Redis and emptying the graph."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import neo4j
import pytest
import redis

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
