"""The always-warm recall loop: block-pop requests, search the in-memory index, reply.

No fork and no RQ job per request: one process holds the index and warm connections.
A second thread tails the change stream the ingest workers write, so the index stays
fresh. N replicas may pop from the same request list; each keeps its own index.

Honest degradation: :meth:`RecallWorker.run` serves at once. The graph is read in a
background thread (retried with back-off while the graph is down) while the tail already
applies what the stream brings; until the graph read is applied, answers say
``graph_unavailable``, and again whenever the graph stops answering the probe (nothing
new is stored then; answers come from what the replica has). A replica further behind
the stream than ``lag_degraded_s`` says ``change_stream_lag``. Other threads publish the
replica's heartbeat (``workers/recall/replica.py``) and probe the graph.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis
import structlog
from pydantic import ValidationError

from turngraph.schemas.changes import decode_change
from turngraph.schemas.defaults import RECALL_LAG_DEGRADED_S
from turngraph.schemas.errors import ErrorCode, InvalidPayloadError
from turngraph.schemas.keys import RECALL_REPLY_PREFIX
from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.schemas.shards import SHARDED_REQUESTS_SUFFIX, ShardSet
from turngraph.schemas.tenants import tenant_of_key
from turngraph.schemas.validation import invalid_fields
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.recall.bootstrap import (
    MemorySource,
    VectorSource,
    all_memories,
    stored_vectors,
)
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.recall.memory_block import render_memory_block
from turngraph.workers.recall.ranking import DEFAULT as DEFAULT_RANKING
from turngraph.workers.recall.ranking import Ranking
from turngraph.workers.recall.replica import (
    CHANGE_STREAM_LAG,
    GRAPH_UNAVAILABLE,
    HEARTBEAT_EVERY_S,
    ReplicaHeartbeat,
    heartbeat_key,
    publish_heartbeat,
    replica_name,
    stream_lag_s,
)
from turngraph.workers.recall.search import search
from turngraph.workers.recall.sharding import (
    claim_shards,
    held_upsert,
    holds_memory,
    shard_request_keys,
    withdraw_claims,
)
from turngraph.workers.recall.tenancy import (
    ReplyKeys,
    foreign_scope_fields,
    qualified,
    tenant_request_keys,
    unqualify_results,
)
from turngraph.workers.recall.vectors import Vector

log = structlog.get_logger(__name__)

POP_TIMEOUT_S = 1.0
"""How long one BLPOP waits before the loop checks whether it should stop."""

TAIL_BLOCK_MS = 1_000
"""How long one XREAD on the change stream blocks."""

TAIL_BATCH = 1_000
"""Change entries applied per XREAD."""


TENANTS_REFRESH_S = 5.0
"""How often the worker looks for tenants added since (their request lists are popped)."""

BOOTSTRAP_BACKOFF_S = (0.5, 1.0, 2.0, 5.0)
"""Waits between attempts to read the graph while it is down (then the last, repeated)."""

LatencyObserver = Callable[[float], None]
"""Told the seconds each answered request took (the metrics histogram)."""

GraphProbe = Callable[[], object]
"""Raises when the graph server does not answer (the shell passes the driver's check)."""

GRAPH_PROBE_EVERY_S = 5.0
"""How often a serving replica checks that the graph answers."""

GRAPH_STALE_S = 15.0
"""No successful graph probe for this long: answers say ``graph_unavailable``."""


@dataclass
class RecallCounters:
    answered: int = 0
    skipped_late: int = 0
    malformed: int = 0
    refused_reply_to: int = 0
    refused_scope: int = 0
    refused_shard: int = 0
    """Requests for a partition outside the replica's shards (clients disagree on the count)."""
    changes_skipped: int = 0
    """Change-stream upserts of partitions outside the replica's shards."""
    changes_applied: int = 0
    bad_changes: int = 0
    bootstrap_failures: int = 0
    degraded: Counter[str] = field(default_factory=Counter)
    """Answers flagged ``degraded``, per reason."""


def _now_ms() -> int:
    return int(time.time() * 1000)


class RecallWorker:
    def __init__(
        self,
        *,
        redis_client: redis.Redis,
        store: MemorySource,
        requests_key: str,
        changes_stream: str,
        reply_ttl_s: int,
        embedder: Embedder | None = None,
        vectors: VectorSource | None = None,
        reply_prefix: str = RECALL_REPLY_PREFIX,
        lag_degraded_s: float = RECALL_LAG_DEGRADED_S,
        latency_observer: LatencyObserver | None = None,
        graph_probe: GraphProbe | None = None,
        name: str | None = None,
        shards: ShardSet | None = None,
        config_fingerprint: str = "",
        ranking: Ranking = DEFAULT_RANKING,
    ) -> None:
        self._redis = redis_client
        self._config_fingerprint = config_fingerprint
        self.shards = shards if shards is not None else ShardSet.every()
        """The shards this replica serves (every one when unsharded)."""
        self._store = store
        self._vectors = vectors
        self._reply_keys = ReplyKeys(reply_prefix)
        self._requests_key = requests_key
        self._tenant_requests: list[str] = []
        self._tenants_read_at = float("-inf")
        self._changes_stream = changes_stream
        self._reply_ttl_s = reply_ttl_s
        self.index = MemoryIndex(embedder, ranking)
        self.counters = RecallCounters()
        self._stop = threading.Event()
        self._last_change_id = "0-0"
        self._tail: threading.Thread | None = None
        self.name = name or replica_name(socket.gethostname(), os.getpid(), secrets.token_hex(3))
        self.lag_degraded_s = lag_degraded_s
        self.lag_s = 0.0
        """Age of the oldest change-stream entry not applied yet (heartbeat thread)."""
        self.bootstrapped = False
        """True once the graph's memories are in the index."""
        self._loaded: tuple[str, list[Memory], dict[str, Vector] | None] | None = None
        """The background graph read, handed to the tail thread (the one index writer)."""
        self._loaded_lock = threading.Lock()
        self._latency_observer = latency_observer
        self._graph_probe = graph_probe
        self._graph_ok_at = time.monotonic()
        """When the graph last answered (the bootstrap or a probe)."""

    # -- start-up -----------------------------------------------------------------
    def bootstrap(self) -> int:
        """Load the graph, then catch up from the change stream position noted first
        (synchronously; :meth:`run` does it in the background when not done yet)."""
        self._last_change_id = self._stream_end()
        loaded = self.index.add_many(self._held_memories(), self._stored_vectors())
        self._graph_ok_at = time.monotonic()
        self.bootstrapped = True
        self.apply_pending_changes(block_ms=None)
        log.info("recall_index_ready", memories=loaded)
        return loaded

    def _stream_end(self) -> str:
        last: Any = self._redis.xrevrange(self._changes_stream, count=1)
        return last[0][0].decode() if last else "0-0"

    def _held_memories(self) -> list[Memory]:
        """The graph's memories of this replica's shards."""
        return [m for m in all_memories(self._store) if holds_memory(self.shards, m)]

    def _stored_vectors(self, held: set[str] | None = None) -> dict[str, Vector] | None:
        """The vectors the ingest workers stored for this replica's model, if any (of
        the ``held`` memories only, when sharded)."""
        semantic = self.index.semantic
        if semantic is None or self._vectors is None:
            return None
        found = stored_vectors(self._vectors, semantic.model)
        if held is not None and self.shards.sharded:
            return {key: vector for key, vector in found.items() if key in held}
        return found

    def _load_graph(self, noted: str) -> None:
        """Background: read every memory from the graph, retrying while it is down, and
        hand them to the tail thread. Serving never waits for this."""
        for attempt in itertools.count():
            if self._stop.is_set():
                return
            try:
                memories = self._held_memories()
                stored = self._stored_vectors({m.id for m in memories})
            except Exception as exc:  # the graph down or restarting: try again later
                self.counters.bootstrap_failures += 1
                delay = BOOTSTRAP_BACKOFF_S[min(attempt, len(BOOTSTRAP_BACKOFF_S) - 1)]
                log.warning("recall_graph_unavailable", error=type(exc).__name__, retry_s=delay)
                self._stop.wait(delay)
                continue
            with self._loaded_lock:
                self._loaded = (noted, memories, stored)
            return

    def _apply_loaded(self) -> None:
        """Tail thread: index the graph's memories, then replay the stream from the
        position noted before the graph was read (later changes win again)."""
        with self._loaded_lock:
            loaded, self._loaded = self._loaded, None
        if loaded is None:
            return
        noted, memories, stored = loaded
        count = self.index.add_many(memories, stored)
        self._last_change_id = noted
        self._graph_ok_at = time.monotonic()
        self.bootstrapped = True
        log.info("recall_index_ready", memories=count, background=True)

    def apply_pending_changes(self, block_ms: int | None) -> int:
        """Apply what the stream holds after the last applied entry; returns how many."""
        reply: Any = self._redis.xread(
            {self._changes_stream: self._last_change_id}, count=TAIL_BATCH, block=block_ms
        )
        applied = 0
        for _stream, entries in reply or []:
            for entry_id, fields in entries:
                self._last_change_id = entry_id.decode()
                try:
                    change = decode_change(fields)
                    if not held_upsert(self.shards, change):
                        self.counters.changes_skipped += 1
                        continue
                    self.index.apply(change)
                    applied += 1
                except InvalidPayloadError:
                    self.counters.bad_changes += 1
                    log.warning("recall_change_rejected", entry_id=self._last_change_id)
        self.counters.changes_applied += applied
        return applied

    def _tail_changes(self) -> None:
        while not self._stop.is_set():
            try:
                self._apply_loaded()
                # Short blocks until the graph read is applied, so it is applied promptly.
                self.apply_pending_changes(
                    block_ms=TAIL_BLOCK_MS if self.bootstrapped else TAIL_BLOCK_MS // 10
                )
            except redis.RedisError as exc:
                log.warning("recall_change_tail_error", error=type(exc).__name__)
                self._stop.wait(0.5)

    # -- serving ------------------------------------------------------------------
    def handle(self, raw: bytes, tenant: str | None = None) -> RecallResponse | None:
        """Answer one raw request; ``None`` when nobody can or should get a reply.

        ``tenant``: the tenant whose request list it came from (None: the operator's
        list). A tenant's request may reply only on that tenant's reply keys and names
        scope keys of that tenant only (qualified here; a key already in the qualified
        form is refused); its results carry event ids as the tenant named them."""
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            self.counters.malformed += 1
            log.warning("recall_request_malformed", reason="not_json")
            return None
        reply_to = data.get("reply_to") if isinstance(data, dict) else None
        request_id = data.get("request_id") if isinstance(data, dict) else None
        if reply_to and not self.replies_allowed_to(reply_to, tenant):
            # A reply key outside our reply namespace (the ingest queue, the change
            # stream...): answering would write into, and then expire, someone's key.
            self.counters.refused_reply_to += 1
            log.warning("recall_request_refused", reason="reply_to outside the reply keys")
            return None
        try:
            request = RecallRequest.model_validate(data)
        except ValidationError as exc:
            self.counters.malformed += 1
            fields = invalid_fields(exc, "request")
            log.warning("recall_request_malformed", reason="invalid", fields=fields)
            if not isinstance(reply_to, str) or not reply_to:
                return None
            response = RecallResponse.failure(
                str(request_id or "unknown")[:128],
                ErrorCode.INVALID_REQUEST,
                f"invalid recall request: {', '.join(fields)}",
                "fix the named fields; see schemas/json/RecallRequest.schema.json",
            )
            self._reply(reply_to, response)
            return response
        if tenant is not None and not request.reply_to:
            self.counters.malformed += 1  # a tenant's answer can only go to its reply keys
            log.warning("recall_request_malformed", reason="no reply_to", tenant=tenant)
            return None
        if request.sent_at_ms is not None and _now_ms() > request.sent_at_ms + request.deadline_ms:
            self.counters.skipped_late += 1
            log.info("recall_request_late", request_id=request.request_id)
            return None
        if tenant is not None:
            foreign = foreign_scope_fields(request)
            if foreign:
                return self._refuse_scope(request, tenant, foreign)
            request = qualified(request, tenant)
        if not self.shards.answers(request.workspace, request.user):
            return self._refuse_shard(request)
        started = time.perf_counter()
        response = search(self.index, request)
        if tenant is not None:
            unqualify_results(response.results, tenant)
        response.memory_block = render_memory_block(response.results)
        response.degraded += self.degraded_reasons()
        if request.reply_to:
            self._reply(request.reply_to, response)
        self.counters.answered += 1
        self.counters.degraded.update(response.degraded)
        if self._latency_observer is not None:
            self._latency_observer(time.perf_counter() - started)
        return response

    def _refuse_scope(
        self, request: RecallRequest, tenant: str, fields: list[str]
    ) -> RecallResponse:
        """A tenant named a scope key in another tenant's (qualified) form: no search, an
        error naming the fields on the tenant's own reply key, nothing else touched."""
        self.counters.refused_scope += 1
        log.warning("recall_request_refused", reason="foreign scope key", fields=fields)
        response = RecallResponse.failure(
            request.request_id,
            ErrorCode.INVALID_REQUEST,
            f"invalid recall request: {', '.join(fields)} (a key of another tenant)",
            "name your own scope keys; the t-<tenant>- form is reserved",
        )
        self._reply(request.reply_to, response)
        return response

    def _refuse_shard(self, request: RecallRequest) -> RecallResponse | None:
        """A request on this replica's list for another shard's partition: the client
        routes with another shard count. An error, never an answer from missing data."""
        self.counters.refused_shard += 1
        log.warning("recall_request_refused", reason="partition of another shard")
        response = RecallResponse.failure(
            request.request_id,
            ErrorCode.INVALID_REQUEST,
            "recall request sent to a shard that does not hold its workspace",
            "give clients and recall replicas the same TURNGRAPH_RECALL_SHARDS",
        )
        if request.reply_to:
            self._reply(request.reply_to, response)
        return response

    def replies_allowed_to(self, reply_to: object, tenant: str | None = None) -> bool:
        """True for a key the worker may answer on (``tenancy.ReplyKeys``)."""
        return self._reply_keys.allowed(reply_to, tenant)

    def degraded_reasons(self) -> list[str]:
        """What the replica itself lacks: the graph's memories, or freshness."""
        reasons = []
        if not self.bootstrapped or not self.graph_reachable:
            reasons.append(GRAPH_UNAVAILABLE)
        if self.lag_s > self.lag_degraded_s:
            reasons.append(CHANGE_STREAM_LAG)
        return reasons

    @property
    def graph_reachable(self) -> bool:
        """False when the graph has not answered a probe for ``GRAPH_STALE_S``."""
        if self._graph_probe is None:
            return True
        return time.monotonic() - self._graph_ok_at <= GRAPH_STALE_S

    def _probe_graph(self) -> None:
        assert self._graph_probe is not None
        while not self._stop.wait(GRAPH_PROBE_EVERY_S):
            if not self.bootstrapped:
                continue  # the bootstrap thread is trying already
            try:
                self._graph_probe()
            except Exception as exc:  # any failure means: not answering now
                log.warning("recall_graph_probe_failed", error=type(exc).__name__)
                continue
            self._graph_ok_at = time.monotonic()

    def heartbeat(self) -> ReplicaHeartbeat:
        """Measure the lag and publish this replica's heartbeat; returns what it wrote."""
        position = self._last_change_id
        self.lag_s = stream_lag_s(self._redis, self._changes_stream, position)
        beat = ReplicaHeartbeat(
            replica=self.name,
            bootstrapped=self.bootstrapped,
            graph_reachable=self.graph_reachable,
            position=position,
            lag_s=round(self.lag_s, 3),
            memories=len(self.index),
            at=time.time(),
            shards=sorted(self.shards.owned),
            shard_count=self.shards.count,
            config=self._config_fingerprint,
        )
        publish_heartbeat(self._redis, beat)
        claim_shards(self._redis, self.shards, self.name)
        return beat

    def _beat(self) -> None:
        while not self._stop.is_set():
            try:
                self.heartbeat()
            except redis.RedisError as exc:
                log.warning("recall_heartbeat_error", error=type(exc).__name__)
            self._stop.wait(HEARTBEAT_EVERY_S)

    def _reply(self, reply_to: str, response: RecallResponse) -> None:
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.rpush(reply_to, response.model_dump_json())
            pipe.expire(reply_to, self._reply_ttl_s)
            pipe.execute()

    def request_keys(self) -> list[str]:
        """The operator's request list, then every tenant's (re-read now and then)."""
        now = time.monotonic()
        if now - self._tenants_read_at >= TENANTS_REFRESH_S:
            self._tenant_requests = tenant_request_keys(self._redis)
            self._tenants_read_at = now
        return shard_request_keys(self.shards, [self._requests_key, *self._tenant_requests])

    def serve_once(self, timeout_s: float = POP_TIMEOUT_S) -> bool:
        popped: Any = self._redis.blpop(self.request_keys(), timeout=timeout_s)
        if popped is None:
            return False
        key = popped[0].decode()
        operators = key == self._requests_key or key.startswith(
            self._requests_key + SHARDED_REQUESTS_SUFFIX
        )
        self.handle(popped[1], None if operators else tenant_of_key(key))
        return True

    def run(self) -> None:
        """Serve until :meth:`stop`, at once: the graph read (when :meth:`bootstrap` has not
        run), the change tail and the heartbeat run beside it. A request being answered
        when :meth:`stop` is called is answered; then the heartbeat key is removed."""
        if not self.bootstrapped:
            noted = self._noted_stream_end()
            if noted is None:
                return  # stopped while Redis was away
            self._last_change_id = noted
            threading.Thread(
                target=self._load_graph, args=(noted,), name="recall-bootstrap", daemon=True
            ).start()
        self._tail = threading.Thread(target=self._tail_changes, name="recall-tail", daemon=True)
        self._tail.start()
        beat = threading.Thread(target=self._beat, name="recall-heartbeat", daemon=True)
        beat.start()
        if self._graph_probe is not None:
            threading.Thread(
                target=self._probe_graph, name="recall-graph-probe", daemon=True
            ).start()
        log.info("recall_worker_serving", requests_key=self._requests_key, replica=self.name)
        try:
            while not self._stop.is_set():
                try:
                    self.serve_once()
                except redis.RedisError as exc:
                    log.warning("recall_redis_error", error=type(exc).__name__)
                    self._stop.wait(0.5)
        finally:
            self._stop.set()
            self._tail.join(timeout=TAIL_BLOCK_MS / 1000 + 5)
            beat.join(timeout=HEARTBEAT_EVERY_S + 5)
            with contextlib.suppress(redis.RedisError):  # else the key expires on its own
                withdraw_claims(self._redis, self.shards, self.name)
                self._redis.delete(heartbeat_key(self.name))
            log.info("recall_worker_stopped", replica=self.name)

    def _noted_stream_end(self) -> str | None:
        """The change stream's last entry id, waiting for Redis; ``None`` if stopped."""
        while not self._stop.is_set():
            try:
                return self._stream_end()
            except redis.RedisError as exc:
                log.warning("recall_redis_error", error=type(exc).__name__)
                self._stop.wait(0.5)
        return None

    def stop(self) -> None:
        self._stop.set()
