"""The always-warm recall loop: block-pop requests, search the in-memory index, reply.

No fork and no RQ job per request: one process holds the index and warm connections.
A second thread tails the change stream the ingest workers write, so the index stays
fresh. N replicas may pop from the same request list; each keeps its own index.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass
from typing import Any

import redis
import structlog
from pydantic import ValidationError

from schemas.changes import decode_change
from schemas.errors import InvalidPayloadError
from schemas.keys import RECALL_REPLY_PREFIX
from schemas.recall import ErrorCode, RecallRequest, RecallResponse
from schemas.validation import invalid_fields
from workers.embeddings.protocol import Embedder
from workers.recall.bootstrap import MemorySource, VectorSource, all_memories, stored_vectors
from workers.recall.index import MemoryIndex
from workers.recall.search import render_memory_block, search

log = structlog.get_logger(__name__)

POP_TIMEOUT_S = 1.0
"""How long one BLPOP waits before the loop checks whether it should stop."""

TAIL_BLOCK_MS = 1_000
"""How long one XREAD on the change stream blocks."""

TAIL_BATCH = 1_000
"""Change entries applied per XREAD."""


REPLY_ID_PATTERN = r"[A-Za-z0-9_-]{1,128}"
"""What may follow the reply prefix: a reply key names one request, nothing else."""


@dataclass
class RecallCounters:
    answered: int = 0
    skipped_late: int = 0
    malformed: int = 0
    refused_reply_to: int = 0
    changes_applied: int = 0
    bad_changes: int = 0


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
    ) -> None:
        self._redis = redis_client
        self._store = store
        self._vectors = vectors
        self._reply_key = re.compile(re.escape(reply_prefix) + REPLY_ID_PATTERN)
        self._requests_key = requests_key
        self._changes_stream = changes_stream
        self._reply_ttl_s = reply_ttl_s
        self.index = MemoryIndex(embedder)
        self.counters = RecallCounters()
        self._stop = threading.Event()
        self._last_change_id = "0-0"
        self._tail: threading.Thread | None = None

    # -- start-up -----------------------------------------------------------------
    def bootstrap(self) -> int:
        """Load the graph, then catch up from the change stream position noted first."""
        last: Any = self._redis.xrevrange(self._changes_stream, count=1)
        self._last_change_id = last[0][0].decode() if last else "0-0"
        semantic = self.index.semantic
        stored = (
            stored_vectors(self._vectors, semantic.model)
            if semantic is not None and self._vectors is not None
            else None
        )
        loaded = self.index.add_many(all_memories(self._store), stored)
        del stored
        self.apply_pending_changes(block_ms=None)
        log.info("recall_index_ready", memories=loaded)
        return loaded

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
                    self.index.apply(decode_change(fields))
                    applied += 1
                except InvalidPayloadError:
                    self.counters.bad_changes += 1
                    log.warning("recall_change_rejected", entry_id=self._last_change_id)
        self.counters.changes_applied += applied
        return applied

    def _tail_changes(self) -> None:
        while not self._stop.is_set():
            try:
                self.apply_pending_changes(block_ms=TAIL_BLOCK_MS)
            except redis.RedisError as exc:
                log.warning("recall_change_tail_error", error=type(exc).__name__)
                self._stop.wait(0.5)

    # -- serving ------------------------------------------------------------------
    def handle(self, raw: bytes) -> RecallResponse | None:
        """Answer one raw request; ``None`` when nobody can or should get a reply."""
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError):
            self.counters.malformed += 1
            log.warning("recall_request_malformed", reason="not_json")
            return None
        reply_to = data.get("reply_to") if isinstance(data, dict) else None
        request_id = data.get("request_id") if isinstance(data, dict) else None
        if reply_to and not self.replies_allowed_to(reply_to):
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
        if request.sent_at_ms is not None and _now_ms() > request.sent_at_ms + request.deadline_ms:
            self.counters.skipped_late += 1
            log.info("recall_request_late", request_id=request.request_id)
            return None
        response = search(self.index, request)
        response.memory_block = render_memory_block(response.results)
        if request.reply_to:
            self._reply(request.reply_to, response)
        self.counters.answered += 1
        return response

    def replies_allowed_to(self, reply_to: object) -> bool:
        """True for a key the worker may answer on: the reply prefix plus a request id."""
        return isinstance(reply_to, str) and self._reply_key.fullmatch(reply_to) is not None

    def _reply(self, reply_to: str, response: RecallResponse) -> None:
        with self._redis.pipeline(transaction=False) as pipe:
            pipe.rpush(reply_to, response.model_dump_json())
            pipe.expire(reply_to, self._reply_ttl_s)
            pipe.execute()

    def serve_once(self, timeout_s: float = POP_TIMEOUT_S) -> bool:
        popped: Any = self._redis.blpop([self._requests_key], timeout=timeout_s)
        if popped is None:
            return False
        self.handle(popped[1])
        return True

    def run(self) -> None:
        """Serve until :meth:`stop`; the change tail runs beside it."""
        self._tail = threading.Thread(target=self._tail_changes, name="recall-tail", daemon=True)
        self._tail.start()
        log.info("recall_worker_serving", requests_key=self._requests_key)
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

    def stop(self) -> None:
        self._stop.set()
