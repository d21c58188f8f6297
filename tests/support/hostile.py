"""Hypothesis strategies for hostile input: turn events an editor plugin could send and raw
RQ job hashes a buggy non-Python client could write straight into the queue.

``collect(strategy, n)`` draws ``n`` examples once, deterministically (``derandomize``), so
a test can push them all through real processes and check the whole outcome.
"""

from __future__ import annotations

import json
import random
import zlib
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from turngraph.schemas.defaults import INGEST_FUNCTION

NASTY = [
    "\x00",
    "\uffff",
    "\u202e\u2066rtl\u2069",
    "\ud7ff\ue000\U0010ffff",
    "MATCH (n) DETACH DELETE n",
    "'}) RETURN 1 //",
    "redis.call('FLUSHALL')",
    "*1\r\n$8\r\nFLUSHALL\r\n",
    "-----BEGIN PRIVATE KEY-----\nMIIE",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + "a1" * 18,
    "../../../etc/passwd",
    "{label}",
    "$rows",
    "1e999",
    "NaN",
]
TEXT = st.text(max_size=12) | st.sampled_from(NASTY)
LONG = st.builds(lambda s, n: s * n, TEXT.filter(bool), st.integers(1, 3_000))
IDS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzAB0123456789_-", min_size=1, max_size=24)
JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=4,
)
MOMENTS = st.sampled_from(
    [
        "2026-11-21T05:00:00Z",
        "2026-11-21T05:00:00+14:00",
        "0001-01-01T00:30:00+05:00",
        "9999-12-31T23:59:59-12:00",
        "1969-12-31T23:59:59Z",
        "2026-11-21T05:00:00",
        "yesterday",
    ]
)


def _either(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Hostile one time in ten per field, so that about half the events get through and
    the graph is checked too."""
    # sampled_from favours its first elements: valid first
    return st.sampled_from(range(10)).flatmap(lambda k: hostile if k == 9 else valid)


EVENT = st.fixed_dictionaries(
    {
        "session_id": _either(IDS, TEXT | JSONISH),
        "workspace": _either(IDS, TEXT),
        "user": _either(IDS, TEXT),
        "turn_index": _either(
            st.integers(0, 10_000_000),
            st.integers() | st.floats() | st.sampled_from([10**400, "7", True]),
        ),
        "role": _either(st.sampled_from(["user", "assistant", "system", "tool"]), TEXT),
        "content": _either(TEXT.filter(bool) | LONG, JSONISH),
        "occurred_at": _either(st.just("2026-11-21T05:00:00Z"), MOMENTS),
        "client": _either(st.fixed_dictionaries({"name": TEXT.filter(bool)}), JSONISH),
    },
    optional={
        "speaker": _either(TEXT, LONG),
        "importance": _either(st.floats(0, 1), st.floats() | st.integers(-2, 2)),
        "tags": _either(st.lists(TEXT, max_size=5), st.lists(TEXT | LONG, max_size=60)),
        "references": st.lists(
            st.fixed_dictionaries(
                {
                    "kind": _either(st.just("file"), st.sampled_from(["url", "x"])),
                    "value": _either(TEXT.filter(bool), LONG),
                }
            ),
            max_size=3,
        ),
        "git": st.fixed_dictionaries(
            {},
            optional={
                "branch": _either(TEXT, LONG),
                "commit": _either(st.just("0123abcd"), TEXT),
                "repository": _either(TEXT, LONG),
                "dirty": _either(st.booleans(), TEXT),
            },
        ),
        "schema_version": _either(st.just(1), st.sampled_from([2, "1"])),
    },
)
"""A TurnEvent as an editor plugin might send it: every field valid or hostile."""


def unique(event: dict[str, Any], index: int) -> dict[str, Any]:
    """A session id of its own (valid stays valid), so no two examples share an event id;
    one in 25 gets a field TurnEvent does not have."""
    session = event.get("session_id")
    if isinstance(session, str) and session:
        event = {**event, "session_id": f"{session[:100]}-{index}"}
    if index % 25 == 24:
        event = {**event, "unknown_field": index}
    return event


def _valid_turn(index: int) -> dict[str, Any]:
    return {
        "session_id": f"raw-{index}",
        "workspace": "raw-w",
        "user": "raw-u",
        "turn_index": index,
        "role": "user",
        "content": f"raw client turn {index}: edit src/raw{index % 7}.py",
        "occurred_at": "2026-11-21T05:00:00Z",
        "client": {"name": "raw"},
    }


def batch_data(turn_json: bytes) -> bytes:
    """RQ's JSON job data of an ingest batch job holding one turn (compressed when long,
    as RQ does)."""
    data = b'["' + INGEST_FUNCTION.encode() + b'", null, [[' + turn_json + b"]], {}]"
    return zlib.compress(data) if len(data) > 16 * 1024 else data


GARBAGE = st.binary(max_size=40) | TEXT.map(str.encode)
DATA = st.one_of(
    st.just("valid"),
    st.just("valid"),
    st.just("valid"),
    EVENT.map(lambda e: ("payload", e)),
    GARBAGE,
    GARBAGE.map(zlib.compress),
    JSONISH.map(lambda v: json.dumps(v).encode()),
    st.sampled_from(["os.system", "builtins.eval", INGEST_FUNCTION + "x"]).map(
        lambda f: json.dumps([f, None, [[{}]], {}]).encode()
    ),
)
REQUIRED = {"status", "origin", "created_at", "enqueued_at"}
"""Fields our producers always write: valid unless garbage (absent otherwise)."""


def _rarely(valid: st.SearchStrategy[Any], hostile: st.SearchStrategy[Any]) -> Any:
    """Garbage one time in 30 per field: a job has 15 fields, some must stay readable."""
    return st.sampled_from(range(30)).flatmap(lambda k: hostile if k == 29 else valid)


FIELD_VALUES: dict[str, st.SearchStrategy[Any]] = {
    name: _rarely(st.just(valid), GARBAGE)
    if name in REQUIRED
    else _rarely(st.none() | st.just(valid), GARBAGE)
    for name, valid in {
        "status": b"queued",
        "origin": b"turngraph-ingest",
        "created_at": b"2026-11-21T05:00:00.000000Z",
        "enqueued_at": b"2026-11-21T05:00:00.000000Z",
        "started_at": b"2026-11-21T05:00:00.000000Z",
        "timeout": b"120",
        "result_ttl": b"600",
        "failure_ttl": b"600",
        "ttl": b"600",
        "retries_left": b"8",
        "retry_intervals": b"[1, 2]",
        "dependency_ids": b"[]",
        "description": b"ingest_turn(x)",
        "success_callback_name": b"",
        "meta": b"{}",
    }.items()
}
RAW_JOB = st.fixed_dictionaries(
    {
        "id": _either(st.just("valid"), TEXT.filter(bool)),
        "hash": st.one_of(st.just(True), st.just(True), st.just(True), st.just(False)),
        "data": DATA,
        "fields": st.fixed_dictionaries(FIELD_VALUES),
    }
)
"""What a buggy client could write for one job: id, whether a hash exists, every field."""


def raw_job(spec: dict[str, Any], index: int) -> tuple[str, dict[str, bytes] | None]:
    """The job id and hash (None: no hash) ``spec`` stands for."""
    job_id = f"raw-{index}" if spec["id"] == "valid" else f"{spec['id']}#{index}"
    if not spec["hash"]:
        return job_id, None
    data = spec["data"]
    if data == "valid":
        data = batch_data(json.dumps(_valid_turn(index)).encode())
    elif isinstance(data, tuple):
        data = batch_data(json.dumps(unique(data[1], index), allow_nan=True).encode())
    fields = {k: v for k, v in spec["fields"].items() if v is not None}
    return job_id, {**fields, "data": data}


def recombine(examples: list[dict[str, Any]], n: int, seed: int = 13) -> list[dict[str, Any]]:
    """``n`` dicts, each field taken from a randomly chosen example (absent if it lacks
    it): many more hostile combinations than examples drawn, at no Hypothesis cost."""
    rng = random.Random(seed)
    keys = sorted({key for example in examples for key in example})
    out = []
    for _ in range(n):
        mixed = {}
        for key in keys:
            donor = rng.choice(examples)
            if key in donor:
                value = donor[key]
                if isinstance(value, dict) and key == "fields":
                    value = {k: rng.choice(examples)[key].get(k) for k in value}
                mixed[key] = value
        out.append(mixed)
    return out


def collect(strategy: st.SearchStrategy[Any], n: int, per_example: int = 20) -> list[Any]:
    """``n`` examples of ``strategy``, the same on every run (drawn ``per_example`` at a
    time: Hypothesis's own cost is per example)."""
    out: list[Any] = []

    @settings(
        max_examples=-(-n // per_example),
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(st.lists(strategy, min_size=per_example, max_size=per_example))
    def draw(examples: list[Any]) -> None:
        out.extend(examples)

    draw()
    return out[:n]
