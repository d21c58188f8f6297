"""Recall shards: which replica holds which memories, and where a request goes (issue 24).

A workspace partition and a request go to ``shard_of(workspace)`` (of the user without a
workspace); user partitions are on every shard. Replicas and clients agree on the count
(``TURNGRAPH_RECALL_SHARDS``; 1 shards nothing), and each replica claims its shards in
:func:`shard_alive_key`, so a client answers ``degraded`` at once when no replica serves
one. docs/scaling.md ("Recall shards").
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from turngraph.schemas.errors import ConfigurationError

__all__ = [
    "NO_REPLICA", "SHARDED_REQUESTS_SUFFIX", "SHARD_ALIVE_PREFIX", "SHARD_ALIVE_TTL_S",
    "ShardConfigError", "ShardSet", "WorkspaceFilter", "parse_shard_list", "request_shard",
    "shard_alive_key", "shard_of", "shard_requests_key",
]  # fmt: skip

WorkspaceFilter = Callable[[str], bool]
"""Which workspaces a bootstrap read returns (a sharded replica's own); memories in no
workspace or at user level are always returned (every shard holds user partitions)."""

SHARD_ALIVE_PREFIX = "turngraph:recall:shard-alive:"
"""Sorted set per shard of the replicas serving it, scored by claim expiry (unix ms)."""

SHARD_ALIVE_TTL_S = 3.0
"""A replica's claim on its shards runs out this long after its last heartbeat."""

SHARDED_REQUESTS_SUFFIX = ":shard:"
"""A shard's request list is the unsharded list's key plus this and the shard number."""

NO_REPLICA = "shard_unavailable"
"""``degraded`` flag: no live replica serves the request's shard."""


class ShardConfigError(ConfigurationError, ValueError):
    """A shard count or shard list that cannot work (names what to change)."""


def shard_of(key: str, shards: int) -> int:
    """The shard of a partition key (stable across processes, hosts and releases)."""
    if shards <= 1:
        return 0
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % shards


def request_shard(workspace: str | None, user: str | None, shards: int) -> int:
    """The shard answering a request: its workspace's, else its user's."""
    return shard_of(workspace or user or "", shards)


def shard_requests_key(requests_key: str, shard: int, shards: int) -> str:
    """The request list of one shard (the unsharded list itself when ``shards`` is 1)."""
    return requests_key if shards <= 1 else f"{requests_key}{SHARDED_REQUESTS_SUFFIX}{shard}"


def shard_alive_key(shard: int) -> str:
    return f"{SHARD_ALIVE_PREFIX}{shard}"


@dataclass(frozen=True)
class ShardSet:
    """The shards one replica serves, out of ``count``."""

    count: int
    owned: frozenset[int]

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ShardConfigError("TURNGRAPH_RECALL_SHARDS: expected 1 or more")
        outside = sorted(s for s in self.owned if not 0 <= s < self.count)
        if outside or not self.owned:
            raise ShardConfigError(
                f"TURNGRAPH_RECALL_REPLICA_SHARDS: expected shards in 0..{self.count - 1}"
            )

    @classmethod
    def every(cls, count: int = 1) -> ShardSet:
        return cls(count, frozenset(range(max(count, 1))))

    @classmethod
    def of(cls, count: int, owned: Iterable[int] | None, ordinal: int | None) -> ShardSet:
        """The listed shards; else the one a deployment's ordinal gives (a StatefulSet's
        pod index: ``ordinal % count``, so replicas ``count`` apart serve the same
        shard); else every shard."""
        if owned is not None:
            return cls(count, frozenset(owned))
        if ordinal is not None:
            return cls(count, frozenset({ordinal % count}))
        return cls.every(count)

    @property
    def sharded(self) -> bool:
        return self.count > 1

    def holds(self, kind: str, key: str | None) -> bool:
        """Whether this replica keeps a partition (``kind`` workspace or user)."""
        if kind == "user" or not self.sharded:
            return True
        return shard_of(key or "", self.count) in self.owned

    def answers(self, workspace: str | None, user: str | None) -> bool:
        return not self.sharded or request_shard(workspace, user, self.count) in self.owned


def parse_shard_list(text: str) -> tuple[int, ...]:
    """``"0,2"`` -> ``(0, 2)``; a clear error for anything else."""
    try:
        shards = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise ShardConfigError(
            "TURNGRAPH_RECALL_REPLICA_SHARDS: expected shard numbers separated by commas"
        ) from None
    if not shards:
        raise ShardConfigError("TURNGRAPH_RECALL_REPLICA_SHARDS: expected at least one shard")
    return shards
