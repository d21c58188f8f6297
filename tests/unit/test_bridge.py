"""The stdio bridge: typed errors for every malformed line, never a crash (property tests)."""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.worker_processes import wait_for
from turngraph.embedded.process import free_port
from turngraph.producers import bridge_io
from turngraph.producers.consent import ConsentStore
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations
from turngraph.producers.publisher import Publisher
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.recall import RecallResponse

ENDPOINT = "redis://127.0.0.1:1/0"
CODES = {code.value for code in ErrorCode}


class FakeRecaller:
    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def recall(self, query: str, **options: Any) -> RecallResponse:
        self.calls.append((query, options))
        return RecallResponse(request_id="r1", success=True)


@pytest.fixture
def bridge(tmp_path: Path) -> Iterator[Operations]:
    hasher = ScopeHasher(b"s" * 32)
    consent = ConsentStore(tmp_path)
    consent.enable(hasher.workspace("/work/proj"), ENDPOINT)
    publisher = Publisher(redis_url=f"redis://127.0.0.1:{free_port()}/0", buffer_size=100)
    yield Operations(
        hasher=hasher,
        consent=consent,
        backend=Backend(
            endpoint=ENDPOINT,
            publisher=publisher,
            recaller=FakeRecaller(),
            queue_status=lambda: {"length": 0},
        ),
    )
    publisher.close(timeout_s=0.01)


def _event(**over: Any) -> dict[str, Any]:
    event = {
        "session_id": "editor-session-1",
        "workspace": "/work/proj",
        "user": "alice",
        "turn_index": 0,
        "role": "user",
        "content": "how do we bound the queue?",
        "client": {"name": "vscode-ext", "version": "1.0"},
    }
    event.update(over)
    return event


def test_publish_hashes_scopes_and_buffers(bridge: Operations) -> None:
    reply = bridge.handle_line(json.dumps({"id": 7, "op": "publish", "event": _event()}))
    assert reply["id"] == 7
    # Nothing listens at the publisher's port: the turn is buffered either way. Which reply
    # says so depends on whether the sender thread has already failed to connect (then the
    # bridge knows Redis is away and says it is kept here), a race a loaded machine loses.
    if reply["success"]:
        assert reply["buffered"] is True
    else:
        assert reply["error_code"] == "BACKEND_UNAVAILABLE" and reply["pending"] == 1
    event = bridge.build_event(_event())
    assert event.workspace.startswith("w_") and "alice" not in event.model_dump_json()


def test_publish_without_consent_is_refused(bridge: Operations) -> None:
    reply = bridge.handle_line(
        json.dumps({"op": "publish", "event": _event(workspace="/other/proj")})
    )
    assert reply["error_code"] == "CONSENT_REQUIRED"
    # Issue 35: the fix said `--workspace <path>`; it names the folder to run it for.
    assert reply["remediation"] == "run: turngraph consent enable --workspace /other/proj"
    spaced = bridge.handle_line(
        json.dumps({"op": "publish", "event": _event(workspace="/my proj/it's")})
    )
    assert spaced["remediation"].endswith("--workspace '/my proj/it'\"'\"'s'")


def test_invalid_event_names_fields_but_never_quotes_input(bridge: Operations) -> None:
    secret_content = "x" * 300_000  # too long
    reply = bridge.handle_line(
        json.dumps({"op": "publish", "event": _event(content=secret_content, role="robot")})
    )
    assert reply["error_code"] == "INVALID_REQUEST"
    assert "content" in reply["user_message"] and "role" in reply["user_message"]
    assert "xxxxxxxx" not in json.dumps(reply) and "robot" not in json.dumps(reply)


@pytest.mark.parametrize(
    ("field", "raw"),
    [
        ("turn_index", "Infinity"),
        ("turn_index", "1e999"),
        ("turn_index", "-Infinity"),
        ("importance", "NaN"),
        ("importance", "1e999"),
        ("occurred_at", '"0001-01-01T00:30:00+05:00"'),
        ("occurred_at", '"9999-12-31T23:30:00-05:00"'),
        ("occurred_at", '"1969-12-31T23:59:59Z"'),
        ("occurred_at", "1e999"),
    ],
)
def test_values_the_writer_cannot_store_are_typed_errors(
    bridge: Operations, field: str, raw: str
) -> None:
    line = json.dumps({"op": "publish", "event": _event(**{field: "__RAW__"})})
    reply = bridge.handle_line(line.replace('"__RAW__"', raw))
    assert reply["error_code"] == "INVALID_REQUEST", reply
    assert field in reply["user_message"]


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"occurred_at": "2026-01-01T00:00:00"}, "event.occurred_at: Input should have timezone"),
        (
            {"occurred_at": "1969-12-31T23:59:59Z"},
            "event.occurred_at: occurred_at must lie between",
        ),
        ({"content": "  \n "}, "event.content: content is blank"),
    ],
)
def test_an_invalid_event_says_what_to_change(
    bridge: Operations, fields: dict[str, Any], says: str
) -> None:
    # These named the field and nothing else ("invalid turn event: event.occurred_at"):
    # a naive timestamp from a JavaScript `toISOString()` without its `Z` gave no hint.
    reply = bridge.handle_line(json.dumps({"op": "publish", "event": _event(**fields)}))
    assert reply["error_code"] == "INVALID_REQUEST", reply
    assert says in reply["user_message"], reply["user_message"]


def test_recall_hashes_scope_keys(bridge: Operations) -> None:
    reply = bridge.handle_line(
        json.dumps({"op": "recall", "query": "queue policy?", "workspace": "/work/proj"})
    )
    assert reply["success"] is True
    recaller = bridge.backend.recaller
    assert isinstance(recaller, FakeRecaller)
    assert recaller.calls[0][1]["workspace"].startswith("w_")


def test_flush_and_status(bridge: Operations) -> None:
    assert bridge.handle_line('{"op": "flush", "timeout_s": 0.01}')["success"] is True
    bridge.handle_line(json.dumps({"op": "publish", "event": _event()}))
    reply = bridge.handle_line('{"op": "flush", "timeout_s": 0.01}')
    assert reply["error_code"] == "BACKEND_UNAVAILABLE" and reply["pending"] == 1
    # Without a probe, status reports the publisher's last send. The sender thread makes
    # that send on its own schedule (a 2-core machine at load 10 gave it no slice within
    # the 0.01 s flush in 3 of 50 runs), so wait for the refused connection to be seen.
    publisher = bridge.backend.publisher
    assert publisher is not None
    assert wait_for(lambda: publisher.stats().send_errors >= 1, timeout_s=30)
    status = bridge.handle_line('{"op": "status"}')
    assert status["success"] is True and status["redis_available"] is False
    assert status["degraded"] == ["redis_unreachable"] and "queue" not in status
    assert status["publisher"]["published"] == 1 and status["pending"] == 1


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("not json", "INVALID_JSON"),
        ("[1, 2]", "INVALID_REQUEST"),
        ('{"op": "dance"}', "UNKNOWN_OP"),
        ("{}", "UNKNOWN_OP"),
        ('{"op": "publish"}', "INVALID_REQUEST"),
        ('{"op": "publish", "event": {"session_id": 5}}', "INVALID_REQUEST"),
        ('{"op": "recall", "query": ""}', "INVALID_REQUEST"),
        ('{"op": "recall", "query": "q", "workspace": 3}', "INVALID_REQUEST"),
        ('{"op": "flush", "timeout_s": "soon"}', "INVALID_REQUEST"),
        ('{"op": "flush", "timeout_s": true}', "INVALID_REQUEST"),
    ],
)
def test_malformed_lines_get_typed_errors(bridge: Operations, line: str, code: str) -> None:
    reply = bridge.handle_line(line)
    assert reply["success"] is False and reply["error_code"] == code
    assert reply["user_message"] and reply["remediation"]


def test_serve_answers_every_line_and_survives_garbage(bridge: Operations) -> None:
    lines_in = io.BytesIO(b'{"op": "status", "id": "a"}\n\n\x00garbage\n{"op": "status"}\n')
    lines_out = io.BytesIO()
    assert bridge_io.serve(bridge, lines_in, lines_out) == 0
    replies = [json.loads(line) for line in lines_out.getvalue().splitlines()]
    assert [r["success"] for r in replies] == [True, False, False, True]
    assert replies[0]["id"] == "a"
    assert replies[1]["user_message"] == "the request line is empty"  # answered, not skipped


def test_invalid_utf8_is_one_typed_error_between_good_replies(bridge: Operations) -> None:
    lines_in = io.BytesIO(
        b'{"op": "status", "id": 1}\n\xff\xfe{"op": "status"}\n'
        b'{"op": "status", "id": 2, "note": "caf\xc3\xa9"}\n{"id": 3, "op": "status"}'
    )
    lines_out = io.BytesIO()
    assert bridge_io.serve(bridge, lines_in, lines_out) == 0
    replies = [json.loads(line) for line in lines_out.getvalue().splitlines()]
    assert [r.get("id") for r in replies] == [1, None, 2, 3]
    assert replies[1]["error_code"] == "INVALID_ENCODING" and replies[1]["remediation"]
    assert lines_out.getvalue().isascii()


def test_an_overlong_line_is_refused_and_the_next_line_answered(
    bridge: Operations, monkeypatch: pytest.MonkeyPatch
) -> None:
    import turngraph.producers.bridge_io as bridge_io

    monkeypatch.setattr(bridge_io, "MAX_LINE_BYTES", 64)
    long_line = b'{"op": "status", "pad": "' + b"x" * 500 + b'"}\n'
    lines_in = io.BytesIO(long_line + b'{"op": "status", "id": 9}\n')
    lines_out = io.BytesIO()
    bridge_io.serve(bridge, lines_in, lines_out)
    replies = [json.loads(line) for line in lines_out.getvalue().splitlines()]
    assert replies[0]["error_code"] == "INVALID_REQUEST" and replies[1]["id"] == 9


@settings(max_examples=100, deadline=None)
@given(raw=st.binary(max_size=200))
def test_any_bytes_get_a_contract_reply(raw: bytes) -> None:
    bridge = Operations(
        hasher=ScopeHasher(b"s" * 32),
        consent=ConsentStore(Path("/nonexistent-consent-dir")),
        backend=Backend(endpoint=ENDPOINT, publisher=None, recaller=None),
    )
    _assert_contract(bridge_io.handle_bytes(bridge, raw))


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner),
    max_leaves=12,
)
EVENT_FIELDS = st.fixed_dictionaries(
    {},
    optional={
        key: JSON_VALUES | st.just(value)
        for key, value in {
            **_event(),
            "occurred_at": "2026-01-01T00:00:00Z",
            "importance": 0.5,
            "tags": ["a"],
        }.items()
    },
)
REQUESTS = st.fixed_dictionaries(
    {"op": st.sampled_from(["publish", "recall", "flush", "status", "nope"]) | JSON_VALUES},
    optional={
        "id": JSON_VALUES,
        "event": EVENT_FIELDS | JSON_VALUES,
        "query": st.text(max_size=30) | JSON_VALUES,
        "workspace": st.text(max_size=10) | JSON_VALUES,
        "max_results": JSON_VALUES,
        "scopes": JSON_VALUES,
        "timeout_s": st.floats(min_value=0, max_value=0.001)
        | JSON_VALUES.filter(
            lambda v: not isinstance(v, int | float) or isinstance(v, bool) or v < 0
        ),
    },
)


def _assert_contract(reply: dict[str, Any]) -> None:
    json.dumps(reply)  # serializable
    assert isinstance(reply["success"], bool)
    if not reply["success"] and "error_code" in reply:
        assert reply["error_code"] in CODES | {"INVALID_REQUEST", "DEADLINE_EXCEEDED"}
        assert reply["user_message"] and reply["remediation"]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(line=st.text(max_size=200))
def test_any_text_line_gets_a_reply(bridge: Operations, line: str) -> None:
    _assert_contract(bridge.handle_line(line))


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=REQUESTS)
def test_any_request_object_gets_a_contract_reply(
    bridge: Operations, request: dict[str, Any]
) -> None:
    reply = bridge.handle_line(json.dumps(request))
    _assert_contract(reply)
    assert reply.get("error_code") != "INTERNAL_ERROR"


RECALL_REQUESTS = st.fixed_dictionaries(
    {"op": st.just("recall"), "query": st.text(min_size=1, max_size=20) | JSON_VALUES},
    optional={
        name: JSON_VALUES
        for name in (
            "scopes",
            "conversation_context",
            "max_results",
            "max_tokens",
            "half_life_days",
            "include_superseded",
            "deadline_ms",
            "session_id",
            "user",
        )
    },
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(request=RECALL_REQUESTS)
def test_recall_through_the_real_client_always_answers_the_contract(
    tmp_path: Path, request: dict[str, Any]
) -> None:
    import redis
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from turngraph.producers.recall_client import RecallClient

    dead = redis.Redis(port=free_port(), socket_connect_timeout=0.05, retry=Retry(NoBackoff(), 0))
    bridge = Operations(
        hasher=ScopeHasher(b"s" * 32),
        consent=ConsentStore(tmp_path),
        backend=Backend(
            endpoint=ENDPOINT, publisher=None, recaller=RecallClient(dead, deadline_ms=50)
        ),
    )
    reply = bridge.handle_line(json.dumps(request))
    _assert_contract(reply)
    assert reply["success"] is False
    assert reply["error_code"] in {"INVALID_REQUEST", "BACKEND_UNAVAILABLE"}


def test_a_bridge_started_before_redis_connects_later(tmp_path: Path) -> None:
    from turngraph.producers.connection import Connection

    attempts: list[int] = []
    publisher = Publisher(redis_url=f"redis://127.0.0.1:{free_port()}/0")

    def connect() -> Connection | None:
        attempts.append(1)
        if len(attempts) < 2:
            return None
        return Connection(publisher=publisher, recaller=FakeRecaller())

    bridge = Operations(
        hasher=ScopeHasher(b"s" * 32),
        consent=ConsentStore(tmp_path),
        backend=Backend(
            endpoint=ENDPOINT, publisher=None, recaller=None, connect=connect, reconnect_every_s=0.0
        ),
    )
    first = bridge.handle_line('{"op": "recall", "query": "q"}')
    assert first["error_code"] == "BACKEND_UNAVAILABLE"
    assert bridge.handle_line('{"op": "recall", "query": "q"}')["success"] is True
    assert bridge.handle_line('{"op": "status"}')["publisher"]["published"] == 0
    assert len(attempts) == 2  # connected: no more attempts
    bridge.close()


def test_out_of_range_recall_options_are_clamped_and_reported(bridge: Operations) -> None:
    reply = bridge.handle_line(
        json.dumps(
            {"id": "c", "op": "recall", "query": "q", "max_results": 500, "half_life_days": 0.1}
        )
    )
    assert reply["success"] is True and reply["id"] == "c"
    assert reply["clamped"] == {
        "max_results": {"requested": 500, "used": 50},
        "half_life_days": {"requested": 0.1, "used": 0.5},
    }
    recaller = bridge.backend.recaller
    assert isinstance(recaller, FakeRecaller)
    assert recaller.calls[-1][1]["max_results"] == 50
    in_range = bridge.handle_line('{"op": "recall", "query": "q", "max_results": 7}')
    assert "clamped" not in in_range and recaller.calls[-1][1]["max_results"] == 7


def test_flush_timeout_above_the_cap_is_clamped_and_reported(bridge: Operations) -> None:
    reply = bridge.handle_line('{"op": "flush", "timeout_s": 600}')
    assert reply["success"] is True
    assert reply["clamped"] == {"timeout_s": {"requested": 600.0, "used": 30.0}}


@pytest.mark.parametrize(
    ("request_", "field"),
    [
        ({"op": "recall", "query": "q", "max_results": "5"}, "max_results"),  # strict types
        ({"op": "recall", "query": "q", "max_result": 5}, "max_result"),  # a typo is an error
        ({"op": "status", "verbose": True}, "verbose"),
        ({"op": "publish", "event": _event(occurred_at="2026-01-01T00:00:00")}, "occurred_at"),
        ({"op": "publish", "event": _event(turn_index="3")}, "turn_index"),
        ({"op": "flush", "timeout_s": -1}, "timeout_s"),
    ],
)
def test_requests_are_checked_as_the_schema_says(
    bridge: Operations, request_: dict[str, Any], field: str
) -> None:
    reply = bridge.handle_line(json.dumps({"id": 5, **request_}))
    assert reply["error_code"] == "INVALID_REQUEST" and reply["id"] == 5
    assert field in reply["user_message"]


def test_every_reply_matches_its_reply_model(bridge: Operations) -> None:
    from pydantic import TypeAdapter

    from turngraph.schemas.bridge import REPLY_MODELS

    lines = {
        "publish": json.dumps({"id": 1, "op": "publish", "event": _event()}),
        "recall": '{"id": 2, "op": "recall", "query": "q", "max_tokens": 5}',
        "flush": '{"id": 3, "op": "flush", "timeout_s": 0}',
        "status": '{"id": 4, "op": "status"}',
    }
    for op, line in lines.items():
        reply = bridge.handle_line(line)
        TypeAdapter(REPLY_MODELS[op][0] | REPLY_MODELS[op][1]).validate_python(reply)


def test_recall_takes_a_scope_id_as_it_is(bridge: Operations) -> None:
    workspace = bridge.hasher.workspace("/work/proj")
    user = bridge.hasher.user("alice")
    line = {"op": "recall", "query": "queue?", "workspace": workspace, "user": user}
    assert bridge.handle_line(json.dumps(line))["success"] is True
    recaller = bridge.backend.recaller
    assert isinstance(recaller, FakeRecaller)
    assert recaller.calls[0][1]["workspace"] == workspace
    assert recaller.calls[0][1]["user"] == user
