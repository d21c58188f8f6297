"""A client newer than its recall workers: ``window_from_turn`` (sent by the editor hooks)
is a field an older worker's strict schema refuses. The client leaves it out of requests
that do not use it, asks again without it when a worker refuses it, and from then on
leaves it out; the prompt gets its memory either way."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from pydantic import create_model

from turngraph.producers.recall_client import RecallClient
from turngraph.producers.request_server import RequestServer
from turngraph.schemas.keys import RECALL_REPLY_PREFIX, RECALL_REQUESTS
from turngraph.schemas.recall import RecallRequest, RecallResponse

pytestmark = pytest.mark.integration

OlderRecallRequest: Any = create_model(  # the contract before window_from_turn
    "RecallRequest",
    __config__=RecallRequest.model_config,
    **{name: (field.annotation, field) for name, field in RecallRequest.model_fields.items()
       if name != "window_from_turn"},
)  # fmt: skip


class OlderWorker:
    """Serves the recall request list through the workers' own request server, with the
    older schema; answers every request it accepts with one result."""

    def __init__(self, conn: redis.Redis) -> None:
        self.server: RequestServer[Any, RecallResponse] = RequestServer(
            conn, OlderRecallRequest, RecallResponse, reply_ttl_s=60
        )
        self.answered = 0
        self.stop = threading.Event()

    def serve(self) -> None:
        while not self.stop.is_set():
            popped = self.server.pop([RECALL_REQUESTS], timeout_s=0.2)
            if popped is None:
                continue
            request, _ = self.server.accept(
                popped[1], lambda key: str(key).startswith(RECALL_REPLY_PREFIX)
            )
            if request is not None:
                self.answered += 1
                reply = RecallResponse(
                    request_id=request.request_id,
                    success=True,
                    memory_block="<memory>kept</memory>",
                )
                self.server.reply(request.reply_to, reply)


@pytest.fixture
def older(redis_conn: redis.Redis) -> Iterator[OlderWorker]:
    worker = OlderWorker(redis_conn)
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    yield worker
    worker.stop.set()
    thread.join(timeout=10)


def test_a_request_without_a_window_does_not_name_the_field(
    older: OlderWorker, redis_conn: redis.Redis
) -> None:
    answer = RecallClient(redis_conn, deadline_ms=10_000).recall("which cache?", workspace="ws")
    assert answer.success, answer.user_message
    assert (older.answered, older.server.counters.malformed) == (1, 0)


def test_a_refused_window_is_asked_again_without_it_then_left_out(
    older: OlderWorker, redis_conn: redis.Redis
) -> None:
    client = RecallClient(redis_conn, deadline_ms=10_000)
    first = client.recall("which cache?", workspace="ws", window_from_turn=4)
    assert first.success, first.user_message
    assert first.memory_block == "<memory>kept</memory>"
    assert (older.answered, older.server.counters.malformed) == (1, 1)  # refused once
    second = client.recall("and the queue?", workspace="ws", window_from_turn=6)
    assert second.success, second.user_message
    assert (older.answered, older.server.counters.malformed) == (2, 1)  # not sent again
