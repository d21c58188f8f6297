"""The bridge's distilled-memory ops over an in-memory backend: scope keys hashed, the
deadline clamped and reported, typed failures, secrets refused before anything leaves,
consent for promote, and every reply valid against its reply model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, get_args

import pytest
import redis
from pydantic import TypeAdapter

from turngraph.producers.consent import ConsentStore
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.bridge import REPLY_MODELS
from turngraph.schemas.bridge_distill import PromotableKind
from turngraph.schemas.distill import DistillOp, DistillResponse
from turngraph.schemas.errors import ErrorCode
from turngraph.schemas.memories import PROMOTABLE, MemoryOrigin, PromotedMemory, PromotionKind
from turngraph.schemas.recap import ContextTurn, RollingContext

ENDPOINT = "redis://127.0.0.1:1/0"
NOW = datetime(2026, 11, 24, 9, 0, tzinfo=UTC)
CORPUS = [
    json.loads(line)
    for line in (Path(__file__).parents[1] / "data" / "secrets_corpus.jsonl")
    .read_text()
    .splitlines()
    if line.strip()
]


class FakeDistill:
    """Answers like the maintenance worker would, and records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        self.failure: ErrorCode | None = None
        self.rolling: RollingContext | None = None
        self.redis_down = False

    def _answer(self, op: DistillOp, **payload: Any) -> DistillResponse:
        if self.failure is not None:
            return DistillResponse.failure("r1", self.failure, "nothing found: x", "check it")
        return DistillResponse(request_id="r1", success=True, op=op, **payload)

    def summarize(self, session_id: str, last_n: int = 10, **options: Any) -> DistillResponse:
        self.calls.append(("summarize", (session_id, last_n), options))
        return self._answer(DistillOp.SUMMARIZE, text="Topic: x")  # no summary: incomplete

    def recap(
        self, session_id: str | None, budget_tokens: int = 1_000, **options: Any
    ) -> DistillResponse:
        self.calls.append(("recap", (session_id, budget_tokens), options))
        return self._answer(DistillOp.RECAP, text="Recap")

    def full_summary(self, memory_id: str, **options: Any) -> DistillResponse:
        self.calls.append(("summary", (memory_id,), options))
        return self._answer(DistillOp.SUMMARY, text="<episode>x</episode>")

    def promote(self, kind: Any, text: str, *, user: str, **options: Any) -> DistillResponse:
        self.calls.append(("promote", (kind, text, user), options))
        memory = PromotedMemory(
            id="mem_1",
            kind=PromotionKind(kind),
            scope=options["scope"],
            workspace=options["workspace"],
            user=user,
            text=text,
            origin=MemoryOrigin.PROMOTION,
            source_event_ids=("t_1",),
            created_at=NOW,
        )
        return self._answer(DistillOp.PROMOTE, text=text, memory=memory)

    def read_rolling_context(self, session_id: str) -> RollingContext | None:
        self.calls.append(("context", (session_id,), {}))
        if self.redis_down:
            raise redis.ConnectionError("down")
        return self.rolling


@pytest.fixture
def distill() -> FakeDistill:
    return FakeDistill()


@pytest.fixture
def bridge(tmp_path: Path, distill: FakeDistill) -> Iterator[Operations]:
    hasher = ScopeHasher(b"s" * 32)
    consent = ConsentStore(tmp_path)
    consent.enable(hasher.workspace("/work/proj"), ENDPOINT)
    yield Operations(
        hasher=hasher,
        consent=consent,
        backend=Backend(endpoint=ENDPOINT, publisher=None, recaller=None, distiller=distill),
    )


def _ask(bridge: Operations, op: str, **fields: Any) -> dict[str, Any]:
    reply = bridge.handle_line(json.dumps({"id": 9, "op": op, **fields}))
    ok, error = REPLY_MODELS[op]
    TypeAdapter(ok | error).validate_python(reply)
    assert reply["id"] == 9
    return reply


PROMOTE = {"kind": "preference", "text": "short answers", "workspace": "/work/proj",
           "user": "alice", "session_id": "chat-1"}  # fmt: skip


def test_recap_defaults_to_the_previous_session_with_hashed_keys(
    bridge: Operations, distill: FakeDistill
) -> None:
    _ask(bridge, "recap", workspace="/work/proj", current_session_id="chat-2", budget_tokens=300)
    _, (session, budget), options = distill.calls[0]
    assert session is None and budget == 300
    assert options["workspace"] == bridge.hasher.workspace("/work/proj")
    assert options["current_session_id"] == bridge.hasher.session("chat-2")
    assert "/work/proj" not in json.dumps(distill.calls)


def test_deadline_is_clamped_and_reported(bridge: Operations, distill: FakeDistill) -> None:
    reply = _ask(bridge, "summary", memory_id="sum_1", deadline_ms=10**9)
    assert reply["success"] is True and reply["kind"] == "memory"
    assert reply["clamped"] == {"deadline_ms": {"requested": 10**9, "used": 120_000}}
    assert distill.calls[0][2] == {"deadline_ms": 120_000}


def test_a_reply_without_its_payload_is_an_internal_error(bridge: Operations) -> None:
    reply = _ask(bridge, "summarize", session_id="chat-1", last_n=3)
    assert reply["error_code"] == "INTERNAL_ERROR"


@pytest.mark.parametrize(
    "code", [ErrorCode.NOT_FOUND, ErrorCode.DEADLINE_EXCEEDED,
             ErrorCode.REFUSED, ErrorCode.BACKEND_UNAVAILABLE],
)  # fmt: skip
def test_worker_failures_keep_their_code(
    bridge: Operations, distill: FakeDistill, code: ErrorCode
) -> None:
    distill.failure = code
    reply = _ask(bridge, "recap", workspace="/work/proj")
    assert reply["success"] is False and reply["error_code"] == code.value


def test_promote_hashes_keys_and_needs_consent(bridge: Operations, distill: FakeDistill) -> None:
    reply = _ask(bridge, "promote", **{**PROMOTE, "scope": "user"})
    assert reply["success"] is True and reply["memory"]["scope"] == "user"
    (kind, _, user), options = distill.calls[0][1], distill.calls[0][2]
    assert kind == "preference" and user == bridge.hasher.user("alice")
    assert options["session_id"] == bridge.hasher.session("chat-1")
    refused = _ask(bridge, "promote", **{**PROMOTE, "workspace": "/not/consented"})
    assert refused["error_code"] == "CONSENT_REQUIRED" and len(distill.calls) == 1
    assert refused["remediation"] == "run: turngraph consent enable --workspace /not/consented"


def test_secret_looking_text_is_refused_before_it_leaves(
    bridge: Operations, distill: FakeDistill
) -> None:
    for entry in CORPUS:
        text = entry["content"][:2_000]
        reply = _ask(bridge, "promote", **{**PROMOTE, "text": text})
        assert reply["error_code"] == "REFUSED", entry["kind"]
        assert entry["secret"] not in json.dumps(reply)
    reply = _ask(bridge, "promote", **{**PROMOTE, "text": "the key is [REDACTED:api_key]"})
    assert reply["error_code"] == "REFUSED"
    assert distill.calls == []


def test_context_before_and_after_maintenance_saw_the_session(
    bridge: Operations, distill: FakeDistill
) -> None:
    assert _ask(bridge, "context", session_id="chat-1")["available"] is False
    distill.rolling = RollingContext(
        session_id=bridge.hasher.session("chat-1"),
        summary="Decided: RQ for the job queue.",
        summarized_through=3,
        recent=tuple(ContextTurn(turn_index=i, role="user", content=f"t{i}") for i in range(4, 8)),
        tokens=40,
        updated_at=NOW,
    )
    reply = _ask(bridge, "context", session_id="chat-1")
    assert reply["available"] is True and reply["summarized_through"] == 3
    context = reply["conversation_context"]
    assert context[0] == {"role": "system", "content": "Earlier in this session: "
                          "Decided: RQ for the job queue."}  # fmt: skip
    assert [turn["content"] for turn in context[1:]] == ["t4", "t5", "t6", "t7"]
    distill.redis_down = True
    assert _ask(bridge, "context", session_id="chat-1")["error_code"] == "BACKEND_UNAVAILABLE"


def test_without_a_backend_every_op_is_unavailable(tmp_path: Path) -> None:
    bridge = Operations(
        hasher=ScopeHasher(b"s" * 32),
        consent=ConsentStore(tmp_path),
        backend=Backend(endpoint=ENDPOINT, publisher=None, recaller=None),
    )
    for op, fields in (
        ("summarize", {"session_id": "c"}),
        ("recap", {"workspace": "/w"}),
        ("summary", {"memory_id": "m"}),
        ("context", {"session_id": "c"}),
    ):
        assert _ask(bridge, op, **fields)["error_code"] == "BACKEND_UNAVAILABLE", op


@pytest.mark.parametrize(
    ("op", "fields", "field"),
    [
        ("recap", {}, "workspace"),
        ("summarize", {"session_id": "c", "last_n": 0}, "last_n"),
        ("summary", {"memory_id": "../etc"}, "memory_id"),
        ("promote", {**PROMOTE, "kind": "opinion"}, "kind"),
        ("promote", {**PROMOTE, "scope": "session"}, "scope"),
        ("context", {"session_id": "c", "extra": 1}, "extra"),
    ],
)
def test_invalid_requests_name_the_field(
    bridge: Operations, op: str, fields: dict[str, Any], field: str
) -> None:
    reply = _ask(bridge, op, **fields)
    assert reply["error_code"] == "INVALID_REQUEST" and field in reply["user_message"]


@pytest.mark.parametrize("given", ["raw", "id"])
def test_recap_and_summarize_take_a_raw_key_or_its_id_alike(
    bridge: Operations, distill: FakeDistill, given: str
) -> None:
    """The one rule for scope keys (as ``turngraph scopes`` lists ids): an MCP client that
    passes ``s_…`` gets that session, not the hash of its id."""
    session, workspace = bridge.hasher.session("chat-1"), bridge.hasher.workspace("/work/proj")
    keys = {"raw": ("chat-1", "/work/proj"), "id": (session, workspace)}[given]
    _ask(bridge, "recap", workspace=keys[1], session_id=keys[0])
    _ask(bridge, "summarize", session_id=keys[0], last_n=3)
    (_, (recapped, _), options), (_, (summarized, _), _) = distill.calls
    assert recapped == summarized == session
    assert options["workspace"] == workspace


def test_the_bridge_promotes_exactly_the_promotable_kinds() -> None:
    """The wire's ``Literal`` and the memory kinds are written twice; this ties them."""
    assert set(get_args(PromotableKind)) == {kind.value for kind in PROMOTABLE}
