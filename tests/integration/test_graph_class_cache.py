"""The embedded graph server's class cache (``turngraph/embedded/class_cache.py``), made and
used by real ArcadeDB starts on a cache folder of the test's own: recorded by the first
run, made before the second start, mapped by every start after; broken files cost a
start nothing."""

from __future__ import annotations

from pathlib import Path

import psutil
import pytest

from turngraph.embedded.graph_server import GraphServer

pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]


def _java_options(server: GraphServer) -> list[str]:
    assert server.pid is not None
    return [arg for arg in psutil.Process(server.pid).cmdline() if arg.startswith("-XX:AOT")]


def _run_once(data_dir: Path, cache_dir: Path) -> list[str]:
    """Start (ready: the database answers a query), note the JVM's cache options, stop."""
    server = GraphServer(data_dir, class_cache_dir=cache_dir)
    server.start()
    try:
        return _java_options(server)
    finally:
        server.stop()


def test_the_first_run_records_the_second_makes_the_cache_and_later_ones_map_it(
    tmp_path: Path,
) -> None:
    cache_dir, data_dir = tmp_path / "cache", tmp_path / "graph"
    first = _run_once(data_dir, cache_dir)
    assert first[0] == "-XX:AOTMode=record"
    [configuration] = list(cache_dir.iterdir())
    assert configuration.suffix == ".aotconf" and configuration.stat().st_size > 0

    second = _run_once(data_dir, cache_dir)
    [cache] = list(cache_dir.iterdir())
    assert cache.suffix == ".aot" and second == [f"-XX:AOTCache={cache}"]
    assert cache.stat().st_mode & 0o077 == 0  # the user's own, like the data folder

    assert _run_once(data_dir, cache_dir) == second
    assert list(cache_dir.iterdir()) == [cache]


def test_a_broken_configuration_or_cache_costs_a_start_nothing(tmp_path: Path) -> None:
    cache_dir, data_dir = tmp_path / "cache", tmp_path / "graph"
    cache_dir.mkdir(mode=0o700)
    probe = GraphServer(data_dir, class_cache_dir=cache_dir).class_cache
    assert probe is not None
    probe.configuration.write_bytes(b"cut short by a kill")
    # the configuration cannot be made into a cache: dropped, and this run records anew
    assert _run_once(data_dir, cache_dir)[0] == "-XX:AOTMode=record"
    assert [path.suffix for path in cache_dir.iterdir()] == [".aotconf"]

    probe.configuration.unlink()
    probe.cache.write_bytes(b"not a cache")
    # the JVM checks the cache it is given and starts without this one
    assert _run_once(data_dir, cache_dir) == [f"-XX:AOTCache={probe.cache}"]
