"""What a recall replica serving some shards keeps, pops and claims (``schemas/shards.py``,
docs/scaling.md): only its shards' partitions from the graph and the change stream, only
its shards' request lists, and a claim per shard that clients check before they wait.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import redis

from turngraph.schemas.changes import ChangeEntry, MemoryRecord, MemoryUpsert
from turngraph.schemas.shards import (
    SHARD_ALIVE_TTL_S,
    ShardSet,
    WorkspaceFilter,
    shard_alive_key,
    shard_requests_key,
)
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.postings import partition_of

__all__ = [
    "claim_shards", "held_upsert", "holds_memory", "record_partition", "shard_request_keys",
    "withdraw_claims", "workspace_filter",
]  # fmt: skip


def record_partition(record: MemoryRecord) -> tuple[str, str]:
    """The index partition of a wire record (``postings.partition_of`` of its memory)."""
    if record.scope.value == "user" or not record.workspace:
        return ("user", record.user or "")
    return ("workspace", record.workspace)


def workspace_filter(shards: ShardSet) -> WorkspaceFilter | None:
    """What a sharded replica asks the graph for at bootstrap: its shards' workspaces
    (``None``, everything, when it serves every shard)."""
    if shards.owned >= frozenset(range(shards.count)):
        return None
    return lambda workspace: shards.holds("workspace", workspace)


def holds_memory(shards: ShardSet, memory: Memory) -> bool:
    return shards.holds(*partition_of(memory))


def held_upsert(shards: ShardSet, change: ChangeEntry) -> bool:
    """False for an upsert of a partition outside the replica's shards (other changes
    name a memory id or a scope: applied, and a no-op for what the replica lacks)."""
    return not isinstance(change, MemoryUpsert) or shards.holds(*record_partition(change.memory))


def shard_request_keys(shards: ShardSet, unsharded_keys: Iterable[str]) -> list[str]:
    """Every served shard's list of each request list (the lists themselves unsharded)."""
    return [
        shard_requests_key(key, shard, shards.count)
        for key in unsharded_keys
        for shard in sorted(shards.owned)
    ]


def claim_shards(conn: redis.Redis, shards: ShardSet, replica: str) -> None:
    """Say (for :data:`SHARD_ALIVE_TTL_S`) that ``replica`` serves its shards; drop
    claims that ran out. Nothing when unsharded (clients then do not check)."""
    if not shards.sharded:
        return
    now_ms = int(time.time() * 1000)
    until = now_ms + int(SHARD_ALIVE_TTL_S * 1000)
    with conn.pipeline(transaction=False) as pipe:
        for shard in sorted(shards.owned):
            key = shard_alive_key(shard)
            pipe.zadd(key, {replica: until})
            pipe.zremrangebyscore(key, "-inf", now_ms)
        pipe.execute()


def withdraw_claims(conn: redis.Redis, shards: ShardSet, replica: str) -> None:
    """A stopping replica's claims go at once (clients fail fast from then on)."""
    if not shards.sharded:
        return
    with conn.pipeline(transaction=False) as pipe:
        for shard in sorted(shards.owned):
            pipe.zrem(shard_alive_key(shard), replica)
        pipe.execute()
