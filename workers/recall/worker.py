"""The always-warm recall loop: block-pop requests, search the in-memory index, reply.

No fork and no RQ job per request: one process holds the index and warm connections,
requests come and go through ``producers/request_server.py``, and a second thread tails
the change stream. :meth:`RecallWorker.run` serves at once while the graph is read in the
background (``feed.py``); until then, and while the graph stops answering the probe or
the replica lags the stream, answers say why they are degraded. Other threads publish the
heartbeat (``replica.py``). docs/recall.md ("The index lives in each replica").
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import redis
import structlog

from turngraph.producers.request_server import POP_TIMEOUT_S, RequestServer, ServeCounters
from turngraph.producers.shard_push import load_shard_push
from turngraph.schemas.defaults import RECALL_LAG_DEGRADED_S
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.keys import RECALL_REPLY_PREFIX
from turngraph.schemas.memory_block import render_memory_block
from turngraph.schemas.recall import RecallRequest, RecallResponse
from turngraph.schemas.replicas import ReplicaHeartbeat
from turngraph.schemas.shards import SHARDED_REQUESTS_SUFFIX, ShardSet
from turngraph.schemas.tenants import tenant_of_key
from turngraph.workers.embeddings.protocol import Embedder
from turngraph.workers.recall.bootstrap import MemorySource, VectorSource
from turngraph.workers.recall.feed import TAIL_BLOCK_MS, FeedCounters, IndexFeed
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.ranking import DEFAULT as DEFAULT_RANKING
from turngraph.workers.recall.ranking import Ranking
from turngraph.workers.recall.replica import (
    CHANGE_STREAM_LAG,
    GRAPH_UNAVAILABLE,
    HEARTBEAT_EVERY_S,
    heartbeat_key,
    publish_heartbeat,
    replica_name,
    stream_lag_s,
)
from turngraph.workers.recall.search import search
from turngraph.workers.recall.sharding import claim_shards, shard_request_keys, withdraw_claims
from turngraph.workers.recall.tenancy import (
    ReplyKeys,
    foreign_scope_fields,
    qualified,
    tenant_request_keys,
    unqualify_results,
)

__all__ = [
    "GRAPH_PROBE_EVERY_S", "GRAPH_READERS_JOIN_S", "GRAPH_STALE_S", "TENANTS_REFRESH_S",
    "GraphProbe", "LatencyObserver", "RecallCounters", "RecallWorker",
]  # fmt: skip

log = structlog.get_logger(__name__)

TENANTS_REFRESH_S = 5.0
"""How often the worker looks for tenants added since (their request lists are popped)."""

LatencyObserver = Callable[[float], None]
"""Told seconds (a metrics histogram): ``latency_observer`` those each answered request
took, from its pop to its reply stored by Redis, once the serving loop's next pop has
sent the reply; ``queued_observer`` those each request waited in Redis before it
(``RequestServer``)."""

GraphProbe = Callable[[], object]
"""Raises when the graph server does not answer (the shell passes the driver's check)."""

GRAPH_PROBE_EVERY_S = 5.0
"""How often a serving replica checks that the graph answers."""

GRAPH_READERS_JOIN_S = 30.0
"""How long a stopping replica waits for its threads that query the graph (the probe, the
background read) before it returns and its caller closes the driver."""

GRAPH_STALE_S = 15.0
"""No successful graph probe for this long: answers say ``graph_unavailable``."""


@dataclass
class RecallCounters(ServeCounters, FeedCounters):
    refused_scope: int = 0
    refused_shard: int = 0
    """Requests for a partition outside the replica's shards (clients disagree on the count)."""
    degraded: Counter[str] = field(default_factory=Counter)
    """Answers flagged ``degraded``, per reason."""


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
        queued_observer: LatencyObserver | None = None,
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
        self._reply_keys = ReplyKeys(reply_prefix)
        self._requests_key = requests_key
        self._tenant_requests: list[str] = []
        self._tenants_read_at = float("-inf")
        self._changes_stream = changes_stream
        self.index = MemoryIndex(embedder, ranking)
        self.counters = RecallCounters()
        self._server = RequestServer(
            redis_client,
            RecallRequest,
            RecallResponse,
            reply_ttl_s=reply_ttl_s,
            counters=self.counters,
            queued_observer=queued_observer,
        )
        self._stop = threading.Event()
        self.feed = IndexFeed(
            conn=redis_client,
            store=store,
            vectors=vectors,
            changes_stream=changes_stream,
            index=self.index,
            shards=self.shards,
            counters=self.counters,
            stop=self._stop,
        )
        self.name = name or replica_name(socket.gethostname(), os.getpid(), secrets.token_hex(3))
        self.lag_degraded_s = lag_degraded_s
        self.lag_s = 0.0
        """Age of the oldest change-stream entry not applied yet (heartbeat thread)."""
        self._latency_observer = latency_observer
        self._graph_probe = graph_probe
        self._graph_ok_at = time.monotonic()
        """When the graph last answered a probe."""
        self._push_loaded = False
        """Whether this replica loaded the clients' shard push (``shard_push.py``)."""

    def bootstrap(self) -> int:
        """Load the graph and catch up with the change stream now (:meth:`run` does it
        in the background when not done yet)."""
        return self.feed.bootstrap()

    def apply_pending_changes(self, block_ms: int | None) -> int:
        """Apply what the change stream holds after the last applied entry."""
        return self.feed.apply_pending_changes(block_ms)

    @property
    def bootstrapped(self) -> bool:
        """True once the graph's memories are in the index."""
        return self.feed.bootstrapped

    # -- serving ------------------------------------------------------------------
    def handle(
        self, raw: bytes, tenant: str | None = None, received_at: float | None = None
    ) -> RecallResponse | None:
        """Answer one raw request; ``None`` when nobody can or should get a reply.

        ``tenant``: the tenant whose request list it came from (None: the operator's
        list). A tenant's request must reply on that tenant's reply keys and names scope
        keys of that tenant only (qualified here; a key already in the qualified form is
        refused); its results carry event ids as the tenant named them. An operator's
        request without ``reply_to`` is answered to the caller only. ``received_at``: the
        ``time.perf_counter()`` moment it was popped (default: now); the latency observed
        runs from it to the reply stored by Redis (or to the answer, with no reply key)."""
        received_at = time.perf_counter() if received_at is None else received_at
        request, refused = self._server.accept(
            raw, lambda reply_to: self.replies_allowed_to(reply_to, tenant)
        )
        if request is None:
            return refused
        if tenant is not None:
            foreign = foreign_scope_fields(request)
            if foreign:  # another tenant's (qualified) keys: no search, nothing else touched
                self.counters.refused_scope += 1
                return self._refuse(
                    request,
                    f"{', '.join(foreign)} (a key of another tenant)",
                    "name your own scope keys; the t-<tenant>- form is reserved",
                )
            request = qualified(request, tenant)
        if not self.shards.answers(request.workspace, request.user):
            # The client routes with another shard count: an error, never an answer from
            # missing data.
            self.counters.refused_shard += 1
            return self._refuse(
                request,
                "sent to a shard that does not hold its workspace",
                "give clients and recall replicas the same TURNGRAPH_RECALL_SHARDS",
            )
        response = search(self.index, request)
        if tenant is not None:
            unqualify_results(response.results, tenant)
        response.memory_block = render_memory_block(response.results)
        response.degraded += self.degraded_reasons()
        self.counters.answered += 1  # a reply then lost counts in replies_lost too
        self.counters.degraded.update(response.degraded)
        observer = self._latency_observer
        if request.reply_to:
            on_sent = None if observer is None else lambda at: observer(at - received_at)
            self._server.reply(request.reply_to, response, on_sent)
        elif observer is not None:  # answered to the caller only
            observer(time.perf_counter() - received_at)
        return response

    def _refuse(self, request: RecallRequest, what: str, remediation: str) -> RecallResponse:
        """``INVALID_REQUEST`` saying ``what`` (field names, never values) on the request's
        reply key."""
        log.warning("recall_request_refused", reason=what)
        response = RecallResponse.failure(
            request.request_id,
            ErrorCode.INVALID_REQUEST,
            f"invalid recall request: {what}",
            remediation,
        )
        if request.reply_to:
            self._server.reply(request.reply_to, response)
        return response

    def replies_allowed_to(self, reply_to: object, tenant: str | None = None) -> bool:
        """True for a key the worker may answer on (``tenancy.ReplyKeys``), or no key on an
        operator's request."""
        return (tenant is None and reply_to in ("", None)) or self._reply_keys.allowed(
            reply_to, tenant
        )

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
        answered_at = max(self._graph_ok_at, self.feed.graph_read_at)
        return time.monotonic() - answered_at <= GRAPH_STALE_S

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
        """Measure the lag, publish this replica's heartbeat and claim its shards (loading
        the clients' shard push first when sharded); returns the heartbeat written."""
        position = self.feed.position
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
        if self.shards.sharded:  # before the claim: a client that sees one can push
            load_shard_push(self._redis, replace=not self._push_loaded)
            self._push_loaded = True
        claim_shards(self._redis, self.shards, self.name)
        return beat

    def _beat(self) -> None:
        while not self._stop.is_set():
            try:
                self.heartbeat()
            except redis.RedisError as exc:
                log.warning("recall_heartbeat_error", error=type(exc).__name__)
            self._stop.wait(HEARTBEAT_EVERY_S)

    def request_keys(self) -> list[str]:
        """The operator's request list, then every tenant's (re-read now and then)."""
        now = time.monotonic()
        if now - self._tenants_read_at >= TENANTS_REFRESH_S:
            self._tenant_requests = tenant_request_keys(self._redis)
            self._tenants_read_at = now
        return shard_request_keys(self.shards, [self._requests_key, *self._tenant_requests])

    def serve_once(self, timeout_s: float = POP_TIMEOUT_S) -> bool:
        popped = self._server.pop(self.request_keys(), timeout_s)
        received_at = time.perf_counter()
        if popped is None:
            return False
        key, raw = popped
        operators = key == self._requests_key or key.startswith(
            self._requests_key + SHARDED_REQUESTS_SUFFIX
        )
        self.handle(raw, None if operators else tenant_of_key(key), received_at)
        return True

    def run(self) -> None:
        """Serve until :meth:`stop`, at once: the graph read (when :meth:`bootstrap` has not
        run), the change tail and the heartbeat run beside it. A request being answered
        when :meth:`stop` is called is answered; then the heartbeat key is removed."""
        tail = self.feed.start()
        if tail is None:
            return  # stopped while Redis was away
        beat = threading.Thread(target=self._beat, name="recall-heartbeat", daemon=True)
        beat.start()
        probe = None
        if self._graph_probe is not None:
            probe = threading.Thread(
                target=self._probe_graph, name="recall-graph-probe", daemon=True
            )
            probe.start()
        log.info("recall_worker_serving", requests_key=self._requests_key, replica=self.name)
        try:
            self._server.run(self.serve_once, self._stop)
        finally:
            self._stop.set()
            tail.join(timeout=TAIL_BLOCK_MS / 1000 + 5)
            beat.join(timeout=HEARTBEAT_EVERY_S + 5)
            # No query in flight when the caller closes the driver: closing it under one
            # raised BufferError in the driver's close (a SIGTERM soon after start-up).
            if probe is not None:
                probe.join(timeout=GRAPH_READERS_JOIN_S)
            self.feed.join_reader(GRAPH_READERS_JOIN_S)
            with contextlib.suppress(redis.RedisError):  # else the key expires on its own
                withdraw_claims(self._redis, self.shards, self.name)
                self._redis.delete(heartbeat_key(self.name))
            log.info("recall_worker_stopped", replica=self.name)

    def stop(self) -> None:
        self._stop.set()
