"""validate → redact → extract → write (one transaction) → mark → announce."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any, cast

import pydantic
import redis
import structlog

from turngraph.producers.bounded_queue import delete_admitted, ingested_key
from turngraph.producers.redaction import redact_and_fit
from turngraph.schemas.changes import encode_change
from turngraph.schemas.defaults import CHANGES_MAXLEN, INGESTED_TTL_S
from turngraph.schemas.errors import BackendUnavailableError, InvalidPayloadError, TransientError
from turngraph.schemas.turn_event import TurnEvent
from turngraph.schemas.validation import invalid_fields
from turngraph.workers.enrichment import EnrichmentBacklog
from turngraph.workers.extraction.models import Extraction, Extractor
from turngraph.workers.graph.store import GraphStore
from turngraph.workers.ingest.changes import changes_for
from turngraph.workers.ingest.embeddings import MemoryEmbedder
from turngraph.workers.tombstones import split_forgotten

__all__ = ["IngestPipeline", "IngestResult", "parse_payload"]

log = structlog.get_logger(__name__)


@dataclass
class IngestResult:
    turns: int
    entities: int
    facts: int
    dropped: int
    superseded: int
    forgotten: int = 0
    reextract: int = 0
    """Turns put on the enrichment backlog (with an LLM configured: every turn)."""
    ids_hashed: int = 0
    """Turns whose id looked like a secret and was replaced by its hash here (a producer
    that did not do it: ours does, ``PublisherStats.ids_hashed``)."""

    def as_counts(self) -> dict[str, int]:
        return asdict(self)


def parse_payload(payload: Any) -> TurnEvent:
    """A typed error that names the failing fields, never their (chat) values."""
    try:
        return TurnEvent.model_validate(payload)
    except pydantic.ValidationError as exc:
        where = invalid_fields(exc, "payload")
        raise InvalidPayloadError(f"invalid TurnEvent: {', '.join(where)}") from None


class IngestPipeline:
    """One per worker process, holding its clients; ``ingest`` is safe to repeat."""

    def __init__(
        self,
        *,
        redis_client: redis.Redis,
        store: GraphStore,
        extractor: Extractor,
        changes_stream: str,
        followups: Callable[[Sequence[tuple[TurnEvent, Extraction]]], int] | None = None,
        embeddings: MemoryEmbedder | None = None,
        backlog: EnrichmentBacklog | None = None,
        enrich: Callable[[], object] | None = None,
    ) -> None:
        """``followups`` is told of every written batch (the maintenance jobs it asks for);
        ``embeddings`` embeds what a batch made (else the recall replicas embed it);
        turns the extractor marks ``reextract`` join ``backlog`` (its bound and order),
        and ``enrich`` is called after a batch added some (asks for an enrichment run)."""
        self._redis = redis_client
        self._store = store
        self._extractor = extractor
        self._changes_stream = changes_stream
        self._followups = followups
        self.embeddings = embeddings
        self._backlog = backlog or EnrichmentBacklog()
        self._enrich = enrich

    def ingest(
        self, events: Sequence[TurnEvent], admitted_epoch: int | None = None
    ) -> IngestResult:
        """Write ``events`` (idempotent), skipping those of a scope forgotten after they
        were admitted (``admitted_epoch``, the batch job's stamp; None: every forgotten
        scope's)."""
        # admission's in-flight markers, by the ids it saw (before any id is hashed)
        admitted = [event.event_id for event in events]
        try:
            events, forgotten = split_forgotten(self._redis, events, admitted_epoch)
            if not events:
                delete_admitted(self._redis, admitted)
        except redis.RedisError as exc:
            raise BackendUnavailableError("redis unavailable before graph write") from exc
        for event in forgotten:
            log.info("turn_skipped_scope_forgotten", event_id=event.event_id)
        if not events:
            return IngestResult(0, 0, 0, 0, 0, forgotten=len(forgotten))
        clean = []
        ids_hashed = 0
        for event in events:
            redacted = redact_and_fit(event)
            if redacted.id_hashed:  # a producer that did not hash it: counted, never logged
                ids_hashed += 1
                log.warning("event_id_hashed", event_id=redacted.event.event_id)
            if redacted.truncated:  # a producer that did not redact: cut to fit, counted
                log.warning(
                    "turn_truncated_after_redaction",
                    event_id=event.event_id,
                    fields=",".join(redacted.truncated),
                )
            clean.append(redacted.event)
        extractions = self._extractor.extract(clean)
        batch = list(zip(clean, extractions, strict=True))
        report = self._store.write(batch)
        vectors = (
            self.embeddings.embed(report.memories, report.previous_texts) if self.embeddings else {}
        )
        dropped = report.dropped + sum(extraction.dropped for extraction in extractions)
        now = time.time()
        try:
            with self._redis.pipeline(transaction=False) as pipe:
                for change in changes_for(report, vectors):
                    pipe.xadd(
                        self._changes_stream,
                        cast(Any, encode_change(change)),
                        maxlen=CHANGES_MAXLEN,
                        approximate=True,
                    )
                delete_admitted(pipe, admitted)
                created = set(report.created)
                for event in clean:
                    # the marker counts the writes that created the episode: a turn written
                    # twice (a lost graph write, a broken unique key) reads 2, not 1
                    key = ingested_key(event.event_id)
                    if event.event_id in created:
                        pipe.incr(key)
                        pipe.expire(key, INGESTED_TTL_S)
                    else:
                        pipe.set(key, b"1", ex=INGESTED_TTL_S, nx=True)
                # the offline rules' entities are stored: the LLM enriches them later
                retry = [event.event_id for event, x in batch if x.reextract]
                trimmed = self._backlog.add(pipe, retry, now) if retry else None
                replies = pipe.execute()
        except redis.RedisError as exc:
            # The graph write is committed and idempotent; RQ retries the whole job.
            raise BackendUnavailableError("redis unavailable after graph write") from exc
        if trimmed is not None:
            self._backlog.count_dropped(self._redis, int(replies[trimmed]))
            if self._enrich is not None:
                try:
                    self._enrich()
                except TransientError as exc:  # the periodic run takes the turns
                    log.warning("enrich_request_failed", error=type(exc).__name__)
        if self._followups is not None:
            self._followups(batch)
        for event, extraction in batch:
            log.info("turn_ingested", event_id=event.event_id, entities=len(extraction.entities))
        return IngestResult(
            turns=report.episodes,
            entities=report.entities,
            facts=report.facts,
            dropped=dropped,
            superseded=len(report.superseded),
            forgotten=len(forgotten),
            reextract=len(retry),
            ids_hashed=ids_hashed,
        )
