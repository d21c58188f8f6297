"""The ingest pipeline on real Redis with the in-memory graph store: what it writes, what
it announces on the change stream, what it skips, and how it fails."""

from __future__ import annotations

import pytest
import redis

from tests.support.conversation import CONVERSATION
from tests.support.pipelines import episodes, fake_graph_pipeline, memory_store
from tests.support.turns import turn
from turngraph.producers.bounded_queue import is_ingested
from turngraph.schemas.changes import MemoryUpsert, StatusChange, decode_change
from turngraph.schemas.errors import BackendUnavailableError, InvalidPayloadError
from turngraph.settings import Settings
from turngraph.workers.ingest.pipeline import parse_payload
from turngraph.workers.recall.index import MemoryIndex
from turngraph.workers.recall.memory import Memory
from turngraph.workers.tombstones import mark_forgotten


def _stream(conn: redis.Redis, settings: Settings) -> list[object]:
    return [decode_change(fields) for _, fields in conn.xrange(settings.changes_stream)]


def test_a_batch_is_written_marked_and_announced(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    store = memory_store()
    result = fake_graph_pipeline(redis_conn, settings, store).ingest(CONVERSATION)
    assert result.turns == len(CONVERSATION) and result.superseded == 1
    assert episodes(store) == {e.event_id for e in CONVERSATION}
    assert all(is_ingested(redis_conn, e.event_id) for e in CONVERSATION)
    entries = _stream(redis_conn, settings)
    upserts = [e for e in entries if isinstance(e, MemoryUpsert)]
    assert {e.event_id for e in CONVERSATION} <= {u.memory.id for u in upserts}
    assert [type(e) for e in entries[-1:]] == [StatusChange]
    index = MemoryIndex()
    index.add_many(Memory.from_record(m) for m in store.recallable_memories())
    fed = MemoryIndex()
    for entry in entries:
        fed.apply(entry)  # type: ignore[arg-type]
    assert fed.snapshot() == index.snapshot()


def test_re_delivery_changes_nothing(redis_conn: redis.Redis, settings: Settings) -> None:
    store = memory_store()
    pipeline = fake_graph_pipeline(redis_conn, settings, store)
    pipeline.ingest(CONVERSATION)
    before = list(store.recallable_memories())
    again = pipeline.ingest(CONVERSATION)
    assert again.superseded == 0
    assert list(store.recallable_memories()) == before


def test_turns_of_a_forgotten_scope_are_skipped_and_counted(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    store = memory_store()
    mark_forgotten(redis_conn, "session", "gone")
    kept, dropped = turn("keep src/a.py", 0), turn("drop src/b.py", 0, session="gone")
    result = fake_graph_pipeline(redis_conn, settings, store).ingest([kept, dropped])
    assert (result.turns, result.forgotten) == (1, 1)
    assert episodes(store) == {kept.event_id}


def test_an_invalid_payload_writes_nothing(redis_conn: redis.Redis, settings: Settings) -> None:
    store = memory_store()
    good = turn("fix src/a.py", 0).model_dump(mode="json")
    with pytest.raises(InvalidPayloadError) as caught:
        payloads = [good, {"content": "secret text", "session_id": "s"}]
        fake_graph_pipeline(redis_conn, settings, store).ingest(
            [parse_payload(p) for p in payloads]
        )
    assert "secret text" not in str(caught.value)
    assert episodes(store) == set() and redis_conn.xlen(settings.changes_stream) == 0


def test_redis_unavailable_is_a_transient_error(
    redis_conn: redis.Redis, settings: Settings
) -> None:
    store = memory_store()
    gone = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.2)
    pipeline = fake_graph_pipeline(gone, settings, store)
    with pytest.raises(BackendUnavailableError):
        pipeline.ingest([turn("fix src/a.py", 0)])
