"""Shard placement and its settings (``schemas/shards.py``): stable, and clear errors."""

from __future__ import annotations

import pytest

from turngraph.schemas.errors import ConfigurationError
from turngraph.schemas.shards import (
    ShardSet,
    parse_shard_list,
    request_shard,
    shard_of,
    shard_requests_key,
)
from turngraph.settings import Settings


def test_the_hash_is_stable_across_processes_and_releases() -> None:
    # Fixed values: a change here moves every workspace to another shard (a re-bootstrap).
    assert [shard_of(f"ws{n}", 4) for n in range(8)] == [1, 3, 0, 3, 2, 2, 3, 0]
    assert shard_of("ws0", 1) == 0 and request_shard(None, None, 1) == 0
    counts = [0] * 4
    for n in range(4_000):
        counts[shard_of(f"workspace-{n}", 4)] += 1
    assert min(counts) > 900  # spread evenly
    assert request_shard("w", "u", 4) == shard_of("w", 4)
    assert request_shard(None, "u", 4) == shard_of("u", 4)


def test_request_lists_are_the_unsharded_ones_when_not_sharded() -> None:
    assert shard_requests_key("turngraph:recall:requests", 0, 1) == "turngraph:recall:requests"
    assert shard_requests_key("k", 3, 4) == "k:shard:3"


def test_a_replica_serves_listed_shards_else_its_ordinal_else_all() -> None:
    assert ShardSet.of(4, (0, 2), ordinal=7).owned == {0, 2}
    assert ShardSet.of(4, None, ordinal=7).owned == {3}
    assert ShardSet.of(4, None, None).owned == {0, 1, 2, 3}
    shards = ShardSet(4, frozenset({1}))
    held = [n for n in range(40) if shards.holds("workspace", f"ws{n}")]
    assert held == [n for n in range(40) if shard_of(f"ws{n}", 4) == 1]
    assert shards.holds("user", "anyone")  # user partitions are on every shard


@pytest.mark.parametrize(
    ("env", "names"),
    [
        ({"recall_shards": "4", "recall_replica_shards": "4"}, "REPLICA_SHARDS"),
        ({"recall_shards": "4", "recall_replica_shards": "one"}, "REPLICA_SHARDS"),
        ({"recall_shards": "2", "recall_replica_shards": ","}, "REPLICA_SHARDS"),
    ],
)
def test_bad_shard_settings_name_what_to_change(env: dict[str, str], names: str) -> None:
    settings = Settings(_env_file=None, **env)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match=names):
        settings.recall_shard_set()


def test_zero_shards_is_refused_by_the_settings() -> None:
    with pytest.raises(ValueError, match="recall_shards"):
        Settings(_env_file=None, recall_shards=0)  # type: ignore[call-arg]
    assert parse_shard_list("0, 2") == (0, 2)
