"""A recall replica's heartbeat: the JSON each replica writes under its key
(``RECALL_REPLICA_PREFIX`` + its name), which the doctor, the metrics, ``turngraph up`` and
the benches read.

Readers validate it here: a value that is not a heartbeat is skipped, never raised, and
a position that is not a stream entry id never reaches an ``XRANGE``. Older readers ignore
new fields (so a new field needs a default); an incompatible change bumps
:data:`HEARTBEAT_SCHEMA_VERSION`.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

__all__ = ["HEARTBEAT_SCHEMA_VERSION", "STREAM_ENTRY_ID", "ReplicaHeartbeat", "read_heartbeat"]

HEARTBEAT_SCHEMA_VERSION: Literal[1] = 1
"""Bumped on any incompatible change of :class:`ReplicaHeartbeat`."""

STREAM_ENTRY_ID = r"^[0-9]{1,20}-[0-9]{1,20}$"
"""A Redis stream entry id (milliseconds, sequence)."""


class ReplicaHeartbeat(BaseModel):
    """One replica's last published state."""

    model_config = ConfigDict(extra="ignore", frozen=True, allow_inf_nan=False)

    schema_version: Literal[1] = HEARTBEAT_SCHEMA_VERSION
    replica: str = Field(min_length=1, max_length=256)
    bootstrapped: bool
    graph_reachable: bool = True
    """False when the graph has not answered the replica's probe for a while."""
    position: str = Field(pattern=STREAM_ENTRY_ID)
    """The last change-stream entry id applied (``0-0``: none)."""
    lag_s: float = Field(ge=0)
    """Age of the oldest entry not applied yet; 0 when caught up."""
    memories: int = Field(ge=0)
    at: float
    """Unix time of the heartbeat."""
    shards: list[int] = Field(default_factory=lambda: [0])
    """The shards the replica serves (``schemas/shards.py``)."""
    shard_count: int = Field(default=1, ge=1)
    config: str = ""
    """The hash of the replica's configuration (``turngraph/worker_config.py``)."""

    def to_json(self) -> str:
        return self.model_dump_json()

    @property
    def position_id(self) -> tuple[int, int]:
        """The position as (milliseconds, sequence), for comparing entry ids."""
        millis, _, sequence = self.position.partition("-")
        return int(millis), int(sequence)


def read_heartbeat(value: bytes | str | None) -> ReplicaHeartbeat | None:
    """The heartbeat a key holds; None when it holds none (gone, or not a heartbeat)."""
    if value is None:
        return None
    try:
        return ReplicaHeartbeat.model_validate_json(value)
    except ValidationError:
        return None
