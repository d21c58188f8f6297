"""Recall replicas' heartbeat keys as their readers see them (the doctor, the metrics,
``turngraph up``), against a real Redis: a value under the prefix that is not a
heartbeat is skipped, never raised into the reader."""

from __future__ import annotations

import json
import time

import pytest
import redis

from turngraph.schemas.replicas import ReplicaHeartbeat
from turngraph.workers.recall.replica import (
    heartbeat_key,
    process_is_ready,
    publish_heartbeat,
    read_heartbeats,
    replica_name,
)

pytestmark = pytest.mark.integration

HOST, PID = "host-a", 4242


def _beat(suffix: str, **fields: object) -> ReplicaHeartbeat:
    values: dict[str, object] = {
        "replica": replica_name(HOST, PID, suffix),
        "bootstrapped": True,
        "position": "1700000000000-3",
        "lag_s": 0.0,
        "memories": 12,
        "at": time.time(),
        **fields,
    }
    return ReplicaHeartbeat.model_validate(values)


NOT_HEARTBEATS = {
    "text": b"not json",
    "bytes": b"\xff\xfe",
    "array": b"[1, 2]",
    "missing": json.dumps({"replica": "x", "bootstrapped": True}).encode(),
    "position": json.dumps({**json.loads(_beat("p").to_json()), "position": "(0 + DEL x"}).encode(),
    "negative": json.dumps({**json.loads(_beat("n").to_json()), "memories": -1}).encode(),
}


def test_values_that_are_not_heartbeats_are_skipped(redis_conn: redis.Redis) -> None:
    for suffix, value in NOT_HEARTBEATS.items():
        redis_conn.set(heartbeat_key(replica_name(HOST, PID, suffix)), value)
    assert read_heartbeats(redis_conn) == []
    assert not process_is_ready(redis_conn, HOST, PID)  # skipped, not raised

    live = _beat("live")
    publish_heartbeat(redis_conn, live)
    assert read_heartbeats(redis_conn) == [live]
    assert process_is_ready(redis_conn, HOST, PID, applied="1700000000000-3")
    assert not process_is_ready(redis_conn, HOST, PID, applied="1700000000000-4")


def test_an_older_or_newer_replicas_heartbeat_is_read(redis_conn: redis.Redis) -> None:
    # A rolling upgrade: a replica of the release before (no schema_version, no shards)
    # and one of a later release (a field this reader does not know) both count.
    older = {"replica": "old-1-a", "bootstrapped": True, "position": "0-0", "lag_s": 0.5}
    older |= {"memories": 3, "at": 1.0, "graph_reachable": False}
    newer = {**json.loads(_beat("new").to_json()), "a_later_field": [1, 2]}
    redis_conn.set(heartbeat_key("old-1-a"), json.dumps(older))
    redis_conn.set(heartbeat_key(str(newer["replica"])), json.dumps(newer))
    beats = {b.replica: b for b in read_heartbeats(redis_conn)}
    assert sorted(beats) == ["host-a-4242-new", "old-1-a"]
    assert beats["old-1-a"].shards == [0] and beats["old-1-a"].shard_count == 1
    assert not beats["old-1-a"].graph_reachable and beats["host-a-4242-new"].memories == 12
