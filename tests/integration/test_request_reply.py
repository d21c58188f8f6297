"""The one request/reply exchange (recall and distillation) against a real Redis."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest
import redis

from tests.support.processes import wait_until
from turngraph.producers.request_reply import (
    DeadlineExceeded,
    ServerUnavailable,
    UnreadableReply,
    ask,
    is_reply_key,
)
from turngraph.producers.request_server import RequestServer
from turngraph.schemas.distill import DistillOp, DistillRequest, DistillResponse
from turngraph.schemas.errors import ErrorCode, TransientError

pytestmark = pytest.mark.integration

REQUESTS = "turngraph:test:requests"
PREFIX = "turngraph:test:reply:"


def _request(request_id: str = "r1", **fields: object) -> DistillRequest:
    values: dict[str, object] = {
        "request_id": request_id,
        "reply_to": PREFIX + request_id,
        "op": DistillOp.SUMMARY,
        "memory_id": "m1",
        "deadline_ms": 5_000,
        "sent_at_ms": int(time.time() * 1000),
        **fields,
    }
    return DistillRequest.model_validate(values)


def _server(conn: redis.Redis) -> RequestServer[DistillRequest, DistillResponse]:
    return RequestServer(conn, DistillRequest, DistillResponse, reply_ttl_s=30)


def _ours(reply_to: object) -> bool:
    return is_reply_key(reply_to, PREFIX)


def test_a_request_is_answered_on_its_reply_key_with_a_ttl(redis_conn: redis.Redis) -> None:
    server = _server(redis_conn)
    seen: list[DistillRequest] = []

    def serve() -> None:
        popped = server.pop([REQUESTS], timeout_s=5.0)
        assert popped is not None and popped[0] == REQUESTS
        request, refused = server.accept(popped[1], _ours)
        assert request is not None and refused is None
        seen.append(request)
        answer = DistillResponse(request_id=request.request_id, success=True, text="the text")
        server.reply(request.reply_to, answer)

    thread = threading.Thread(target=serve)
    thread.start()
    reply = ask(
        redis_conn,
        REQUESTS,
        _request(),
        DistillResponse,
        request_ttl_s=60,
        server="a test server",
    )
    thread.join(timeout=10)
    assert reply.success and reply.request_id == "r1" and reply.text == "the text"
    assert seen[0].memory_id == "m1"
    assert redis_conn.exists(REQUESTS) == 0  # popped


def test_nobody_serving_raises_deadline_exceeded_within_the_deadline(
    redis_conn: redis.Redis,
) -> None:
    started = time.monotonic()
    with pytest.raises(DeadlineExceeded) as caught:
        ask(
            redis_conn,
            REQUESTS,
            _request(deadline_ms=50),
            DistillResponse,
            request_ttl_s=60,
            server="a test server",
        )
    assert time.monotonic() - started < 2.0
    assert caught.value.code is ErrorCode.DEADLINE_EXCEEDED
    assert caught.value.reason == "deadline_exceeded"
    assert caught.value.remediation == "start a test server, or raise deadline_ms"
    assert 0 < int(redis_conn.ttl(REQUESTS)) <= 60  # the unserved list expires


def test_a_deadline_longer_than_the_socket_timeout_is_waited_for(redis_conn: redis.Redis) -> None:
    # One BLPOP for the whole deadline was read with the connection's socket timeout: a
    # bridge recall with deadline_ms 5000 on a client made for 750 ms failed after 1.25 s
    # as BACKEND_UNAVAILABLE ("redis_unavailable"), Redis being fine and the worker slow.
    kwargs = redis_conn.connection_pool.connection_kwargs
    short = redis.Redis(host=kwargs["host"], port=kwargs["port"], password=kwargs.get("password"),
                        socket_timeout=0.5)  # fmt: skip
    started = time.monotonic()
    try:
        with pytest.raises(DeadlineExceeded):
            ask(short, REQUESTS, _request(deadline_ms=1_500), DistillResponse,
                request_ttl_s=60, server="a test server")  # fmt: skip
    finally:
        short.close()
    assert 1.4 < time.monotonic() - started < 3.0


def test_an_unreadable_answer_is_a_typed_error(redis_conn: redis.Redis) -> None:
    redis_conn.rpush(PREFIX + "r1", b'{"not": "a reply"}')
    with pytest.raises(UnreadableReply) as caught:
        ask(redis_conn, REQUESTS, _request(), DistillResponse, request_ttl_s=60, server="x")
    assert caught.value.code is ErrorCode.INTERNAL_ERROR and caught.value.reason == "bad_reply"


def test_redis_away_is_a_transient_typed_error() -> None:
    dead = redis.Redis(port=1, socket_connect_timeout=0.05, socket_timeout=0.05)
    with pytest.raises(ServerUnavailable) as caught:
        ask(dead, REQUESTS, _request(), DistillResponse, request_ttl_s=60, server="a worker")
    assert isinstance(caught.value, TransientError)
    assert caught.value.code is ErrorCode.BACKEND_UNAVAILABLE
    assert "a worker" in caught.value.remediation


def test_a_late_request_is_dropped_and_counted(redis_conn: redis.Redis) -> None:
    server = _server(redis_conn)
    late = _request(deadline_ms=10, sent_at_ms=int(time.time() * 1000) - 1_000)
    assert server.accept(late.model_dump_json(), _ours) == (None, None)
    assert server.counters.skipped_late == 1
    assert redis_conn.exists(PREFIX + "r1") == 0


def test_an_invalid_request_gets_a_typed_error_naming_the_field(redis_conn: redis.Redis) -> None:
    server = _server(redis_conn)
    raw = json.dumps({"request_id": "r2", "reply_to": PREFIX + "r2", "op": "nonsense"})
    request, refused = server.accept(raw, _ours)
    assert request is None and refused is not None
    assert refused.error_code is ErrorCode.INVALID_REQUEST
    assert 0 < int(redis_conn.ttl(PREFIX + "r2")) <= 30  # unread replies expire
    popped: Any = redis_conn.lpop(PREFIX + "r2")
    stored = DistillResponse.model_validate_json(popped)
    assert stored == refused and stored.user_message == "invalid distill request: op"
    assert server.accept(b"\xff not json", _ours) == (None, None)
    assert server.accept(b"[1, 2]", _ours) == (None, None)
    assert server.counters.malformed == 3


def test_a_request_nested_past_the_parser_is_dropped_and_counted(
    redis_conn: redis.Redis,
) -> None:
    # The standard parser recurses: this raised RecursionError, which ended the serving
    # process (recall worker, maintenance ask admission) for every client.
    server = _server(redis_conn)
    deep = '{"request_id": "r4", "reply_to": "' + PREFIX + 'r4", "x": ' + "[" * 100_000
    assert server.accept(deep + "]" * 100_000 + "}", _ours) == (None, None)
    assert server.counters.malformed == 1
    assert redis_conn.dbsize() == 0


@pytest.mark.parametrize(
    "reply_to", ["rq:queue:turngraph-ingest", PREFIX, PREFIX + "a:b", PREFIX + "x\r\nDEL y", 5]
)
def test_a_reply_key_outside_the_prefix_is_refused_and_touches_no_key(
    redis_conn: redis.Redis, reply_to: object
) -> None:
    server = _server(redis_conn)
    raw = json.dumps({"request_id": "r3", "reply_to": reply_to, "op": "nonsense"})
    assert server.accept(raw, _ours) == (None, None)
    assert server.counters.refused_reply_to == 1 and server.counters.malformed == 0
    assert redis_conn.dbsize() == 0


def test_the_serve_loop_survives_redis_errors_and_stops() -> None:
    dead = redis.Redis(port=1, socket_connect_timeout=0.05, socket_timeout=0.05)
    server = _server(dead)
    stop = threading.Event()
    calls: list[int] = []

    def serve_once() -> None:
        calls.append(1)
        if len(calls) == 2:
            stop.set()
        server.pop([REQUESTS], timeout_s=0.01)

    server.run(serve_once, stop)
    assert len(calls) == 2  # the first Redis error paused the loop, did not end it


def _answering(
    server: RequestServer[DistillRequest, DistillResponse],
    after_reply: Any = None,
    keys: tuple[str, ...] = (REQUESTS,),
    answered: list[str] | None = None,
    timeout_s: float = 0.2,
    stored: list[str] | None = None,
) -> Any:
    """A ``serve_once`` that pops ``keys`` with ``server`` and answers every request (its
    id appended to ``answered``, in the order served, and to ``stored`` when the server
    says Redis stored its reply)."""

    def serve_once() -> None:
        popped = server.pop(keys, timeout_s=timeout_s)
        if popped is None:
            return
        request, _ = server.accept(popped[1], _ours)
        assert request is not None
        if answered is not None:
            answered.append(request.request_id)
        request_id = request.request_id
        on_sent = None if stored is None else lambda _at: stored.append(request_id)
        server.reply(
            request.reply_to, DistillResponse(request_id=request_id, success=True), on_sent
        )
        server.counters.answered += 1
        if after_reply is not None:
            after_reply()

    return serve_once


def _commands(conn: redis.Redis, name: str) -> int:
    stats: Any = conn.info("commandstats")
    return int(stats.get(f"cmdstat_{name}", {}).get("calls", 0))


def _counting_client(conn: redis.Redis) -> tuple[redis.Redis, list[int]]:
    """A client of ``conn``'s server that counts its round trips (each write of one or
    more commands, a pipeline's included)."""
    sent: list[int] = []

    class Counting(redis.Connection):
        def send_packed_command(self, command: Any, check_health: bool = True) -> None:
            sent.append(1)
            super().send_packed_command(command, check_health)

    pool = redis.ConnectionPool(connection_class=Counting, **conn.connection_pool.connection_kwargs)
    return redis.Redis(connection_pool=pool), sent


def test_a_serving_loop_wakes_once_per_answer(redis_conn: redis.Redis) -> None:
    # One client asking one request at a time: each reply goes with the blocking pop that
    # waits for the next request, one round trip per request (reply, then an empty pop,
    # then a blocking pop would be two, and two wake-ups of an idle server).
    requests = [_request(f"r{i}") for i in range(20)]
    conn, sent = _counting_client(redis_conn)
    server = _server(conn)
    stop = threading.Event()

    def stop_after_the_last() -> None:
        if server.counters.answered == len(requests):
            stop.set()

    def one_at_a_time() -> None:
        for request in requests:
            redis_conn.rpush(REQUESTS, request.model_dump_json())
            assert redis_conn.blpop([str(request.reply_to)], timeout=10) is not None

    conn.ping()  # connected: the connection's own set-up commands are not counted
    sent.clear()
    redis_conn.config_resetstat()
    asking = threading.Thread(target=one_at_a_time)
    asking.start()
    server.run(_answering(server, after_reply=stop_after_the_last, timeout_s=10.0), stop)
    asking.join(timeout=10)
    assert not asking.is_alive()
    assert server.counters.answered == len(requests)
    # The first pop alone, each later one with the last reply, the last reply alone.
    assert len(sent) == len(requests) + 1
    assert _commands(redis_conn, "blmpop") == len(requests) - 1
    assert redis_conn.llen(REQUESTS) == 0


def _blocked_in(conn: redis.Redis, command: str) -> bool:
    clients: Any = conn.client_list()
    return any(c["cmd"] == command and "b" in c["flags"] for c in clients)


def test_a_request_popped_as_the_loop_stops_is_answered(redis_conn: redis.Redis) -> None:
    first = _request("r0")
    later = [_request("r1"), _request("r2")]
    redis_conn.rpush(REQUESTS, first.model_dump_json())
    server = _server(redis_conn)
    stop = threading.Event()

    def stop_while_the_reply_waits() -> None:
        # Told to stop while its pop (which carries r0's reply) waits; r1 comes meanwhile.
        wait_until(lambda: _blocked_in(redis_conn, "blmpop"), 10, "the server's pop blocked")
        stop.set()
        redis_conn.rpush(REQUESTS, *(r.model_dump_json() for r in later))

    def after_reply() -> None:
        if server.counters.answered == 1:
            threading.Thread(target=stop_while_the_reply_waits).start()

    server.run(_answering(server, after_reply=after_reply, timeout_s=10.0), stop)
    answered = [r.request_id for r in (first, *later) if redis_conn.exists(str(r.reply_to))]
    assert answered == ["r0", "r1"]  # r1 popped with r0's reply, answered after stop
    assert server.counters.answered == 2
    assert redis_conn.llen(REQUESTS) == 1  # r2 waits for another server


def test_a_failed_reply_loses_no_request_taken_with_it(redis_conn: redis.Redis) -> None:
    first, second = _request("r0"), _request("r1")
    redis_conn.set(str(first.reply_to), "not a list")  # the reply's RPUSH fails
    redis_conn.rpush(REQUESTS, first.model_dump_json(), second.model_dump_json())
    server = _server(redis_conn)
    stop = threading.Event()
    served: list[int] = []
    stored: list[str] = []
    serve = _answering(server, stored=stored)

    def serve_once() -> None:
        served.append(1)
        if len(served) == 2:
            stop.set()
        serve()

    server.run(serve_once, stop)  # the first reply raises: logged, the loop goes on
    assert server.counters.answered == 2  # r0, whose reply was lost, and r1, taken with it
    assert server.counters.replies_lost == 1
    assert stored == ["r1"]  # r0's reply was refused: nobody is told it was stored
    assert redis_conn.llen(str(second.reply_to)) == 1
    assert redis_conn.llen(REQUESTS) == 0


def test_a_reply_refused_outside_the_serving_loop_is_counted_lost(
    redis_conn: redis.Redis,
) -> None:
    # Outside run() (a request popped with a failed reply, served as the loop ends) the
    # reply is pushed at once: one Redis refuses still counts, as it does in the loop.
    server = _server(redis_conn)
    redis_conn.set(PREFIX + "r0", "not a list")
    stored: list[float] = []
    with pytest.raises(redis.ResponseError):
        server.reply(PREFIX + "r0", DistillResponse(request_id="r0", success=True), stored.append)
    assert server.counters.replies_lost == 1 and stored == []
    server.reply(PREFIX + "r1", DistillResponse(request_id="r1", success=True), stored.append)
    assert server.counters.replies_lost == 1 and len(stored) == 1
    assert redis_conn.llen(PREFIX + "r1") == 1


def test_several_lists_are_served_in_turn_not_one_after_the_other(
    redis_conn: redis.Redis,
) -> None:
    # A backlog on three lists (a replica's shards): Redis pops the first non-empty list
    # it is given, so in a fixed order list c's requests would all wait for a's and b's.
    lists = tuple(f"{REQUESTS}:{name}" for name in "abc")
    for name, key in zip("abc", lists, strict=True):
        redis_conn.rpush(key, *(_request(f"{name}{i}").model_dump_json() for i in range(3)))
    redis_conn.rpush(lists[0], _request("a3").model_dump_json())
    server = _server(redis_conn)
    stop = threading.Event()
    answered: list[str] = []

    def stop_after_the_last() -> None:
        if len(answered) == 10:
            stop.set()

    server.run(_answering(server, stop_after_the_last, lists, answered), stop)
    # The first by a pop alone, the rest each by the pop sending the previous reply.
    assert answered == ["a0", "b0", "c0", "a1", "b1", "c1", "a2", "b2", "c2", "a3"]
    assert all(redis_conn.llen(key) == 0 for key in lists)


def test_the_turn_follows_the_lists_as_they_change(redis_conn: redis.Redis) -> None:
    # Between pops the lists may change (a tenant added, another gone): the turn goes on
    # after the list served last while it is listed, else from the first list.
    a, b, t = (f"{REQUESTS}:{name}" for name in "abt")
    server = _server(redis_conn)
    redis_conn.rpush(a, _request("a0").model_dump_json(), _request("a1").model_dump_json())
    redis_conn.rpush(b, _request("b0").model_dump_json(), _request("b1").model_dump_json())
    redis_conn.rpush(t, _request("t0").model_dump_json(), _request("t1").model_dump_json())

    def pop(*keys: str) -> str:
        popped = server.pop(keys, timeout_s=1.0)
        assert popped is not None
        return popped[0]

    assert [pop(a, b), pop(a, b)] == [a, b]
    assert [pop(a, b, t), pop(a, b, t)] == [t, a]  # t added after b, then a's turn again
    assert [pop(b, t), pop(b, t)] == [b, t]  # a, served last, is gone: from the first
