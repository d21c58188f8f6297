"""One hook call, in process: capture from a transcript (repeated, overlapping, rewritten,
with Redis away), consent, and the entry point's answer to bad input (exit 0, no output,
a counted error)."""

from __future__ import annotations

import io
import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from turngraph.cli.hook_cmd import embedded_redis_url, run_hook
from turngraph.embedded.services import STATE_FILE, ServiceEndpoints, read_endpoints
from turngraph.producers.hooks.editors import EDITORS
from turngraph.producers.hooks.payload import HookAction, HookCall
from turngraph.producers.hooks.runner import HookRunner, HookServices
from turngraph.producers.hooks.state import HookState
from turngraph.producers.publisher_stats import PublisherStats
from turngraph.producers.scopes import ScopeHasher
from turngraph.schemas.turn_event import TurnEvent

FIXTURE = Path(__file__).parents[1] / "data" / "hooks" / "claude-code.jsonl"


class RecordingQueue:
    """Stands in for Redis behind the publisher: keeps each event id once, like the
    bounded queue's idempotency check, and counts the repeats."""

    def __init__(self) -> None:
        self.ids: dict[str, TurnEvent] = {}
        self.duplicates = 0
        self.available = True
        self.lock = threading.Lock()


class RecordingPublisher:
    def __init__(self, queue: RecordingQueue) -> None:
        self.queue = queue
        self.stats = PublisherStats()
        self.redis_available = queue.available

    def publish(self, event: TurnEvent) -> bool:
        if not self.queue.available:
            self.stats.abandoned += 1
            return True
        with self.queue.lock:
            if event.event_id in self.queue.ids:
                self.queue.duplicates += 1
                self.stats.duplicates += 1
            else:
                self.queue.ids[event.event_id] = event
                self.stats.enqueued += 1
        return True

    def flush(self, timeout_s: float = 0) -> bool:
        return self.queue.available

    def close(self, timeout_s: float = 0) -> PublisherStats:
        return self.stats


def _runner(
    tmp_path: Path, queue: RecordingQueue, *, consented: bool = True, editor: str = "claude-code"
) -> HookRunner:
    return HookRunner(
        spec=EDITORS[editor],
        state=HookState(tmp_path / "data"),
        hasher=ScopeHasher(b"s" * 32),
        user="alice",
        consent=lambda workspace: consented,
        services=HookServices(
            publisher=lambda: RecordingPublisher(queue),
            recaller=lambda: None,
            distiller=lambda: None,
        ),
        deadline_ms=750,
        start_budget_tokens=1500,
        started_at=0.0,
    )


def _capture(transcript: Path, tmp_path: Path) -> HookCall:
    return HookCall(HookAction.CAPTURE, "cc-session-1", tmp_path, transcript_path=transcript)


def test_a_repeated_capture_publishes_nothing_twice(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    transcript.write_bytes(b"".join(lines[:8]))
    queue = RecordingQueue()
    runner = _runner(tmp_path, queue)
    runner.run(_capture(transcript, tmp_path))
    first = dict(queue.ids)
    runner.run(_capture(transcript, tmp_path))
    assert queue.ids == first and queue.duplicates == 0  # the offset kept it from re-reading
    transcript.write_bytes(b"".join(lines))
    runner.run(_capture(transcript, tmp_path))
    indexes = sorted(e.turn_index for e in queue.ids.values())
    assert indexes == list(range(len(queue.ids))) and len(queue.ids) == 9
    assert {e.role.value for e in queue.ids.values()} == {"user", "tool", "assistant"}
    tool = next(e for e in queue.ids.values() if e.speaker == "bash")
    assert tool.content.startswith("$ pytest") and "hook" in tool.tags


def test_overlapping_captures_never_duplicate(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(FIXTURE.read_bytes())
    queue = RecordingQueue()
    threads = [
        threading.Thread(
            target=_runner(tmp_path, queue).run, args=(_capture(transcript, tmp_path),)
        )
        for _ in range(6)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(queue.ids) == 9 and queue.duplicates == 0


def test_a_rewritten_transcript_is_detected_and_read_again(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(FIXTURE.read_bytes())
    queue = RecordingQueue()
    runner = _runner(tmp_path, queue)
    runner.run(_capture(transcript, tmp_path))
    rewritten = b"".join(FIXTURE.read_bytes().splitlines(keepends=True)[:3])
    transcript.write_bytes(rewritten.replace(b"drop_oldest", b"drop_newest"))
    runner.run(_capture(transcript, tmp_path))
    counters = HookState(tmp_path / "data").counters()
    assert counters["transcript_rewritten"] == 1
    # Read again from the start, not from the old offset in the middle of a line: the turn
    # it finds has the transcript id of one already sent, so it is a counted duplicate.
    assert len(queue.ids) == 9 and queue.duplicates == 1
    assert not [e for e in queue.ids.values() if "drop_newest" in e.content]
    transcript.write_bytes(transcript.read_bytes() + FIXTURE.read_bytes().splitlines(True)[-2])
    runner.run(_capture(transcript, tmp_path))  # and goes on from the new end
    assert len(queue.ids) == 9 and queue.duplicates == 2


def test_with_redis_away_the_offset_stays_and_the_next_call_catches_up(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(FIXTURE.read_bytes())
    queue = RecordingQueue()
    queue.available = False
    runner = _runner(tmp_path, queue)
    assert runner.run(_capture(transcript, tmp_path)) is None
    assert queue.ids == {}
    assert HookState(tmp_path / "data").counters()["error_backend_unavailable"] >= 1
    queue.available = True
    runner.run(_capture(transcript, tmp_path))
    assert len(queue.ids) == 9


def test_without_consent_nothing_is_read_or_sent(tmp_path: Path) -> None:
    transcript = tmp_path / "t.jsonl"
    transcript.write_bytes(FIXTURE.read_bytes())
    queue = RecordingQueue()
    assert _runner(tmp_path, queue, consented=False).run(_capture(transcript, tmp_path)) is None
    assert queue.ids == {} and HookState(tmp_path / "data").counters() == {"not_consented": 1}


def _hook(
    argv: list[str], stdin: bytes, monkeypatch: pytest.MonkeyPatch, data: Path
) -> tuple[int, str, dict[str, int]]:
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", str(data))
    out = io.StringIO()
    code = run_hook(argv, stdin=io.BytesIO(stdin), stdout=out, environ={})
    return code, out.getvalue(), HookState(data).counters()


@pytest.mark.parametrize(
    "stdin",
    [b"", b"not json", b"[1]", b'{"cwd": "/tmp"}', b'{"session_id": 5, "cwd": "/tmp"}',
     b'{"session_id": "s", "cwd": "/tmp", "prompt": ' + b'"' + b"x" * 10_000_000 + b'"}',
     b"\xff\xfe\x00", b"[" * 200_000 + b"]" * 200_000],
)  # fmt: skip
def test_bad_payloads_exit_0_with_no_output_and_a_counted_error(
    stdin: bytes, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, out, counters = _hook(["prompt", "--editor", "claude-code"], stdin, monkeypatch, tmp_path)
    assert (code, out) == (0, "")
    assert counters == {"error_bad_payload": 1}


def test_bad_arguments_are_counted_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, counters = _hook(["prompt", "--editor", "notepad"], b"{}", monkeypatch, tmp_path)
    assert (code, out, counters) == (0, "", {"error_bad_arguments": 1})


def test_the_hooks_reader_of_services_json_agrees_with_the_embedded_one(tmp_path: Path) -> None:
    assert embedded_redis_url(tmp_path) is None
    endpoints = ServiceEndpoints("redis://:pw@127.0.0.1:1/0", "bolt://x", "u", "p", "d", "", 1)
    import os
    from dataclasses import asdict

    for pid in (os.getpid(), 2**22 + 7):
        (tmp_path / STATE_FILE).write_text(json.dumps({**asdict(endpoints), "owner_pid": pid}))
        found = read_endpoints(tmp_path)
        assert embedded_redis_url(tmp_path) == (found.redis_url if found else None)


def test_payload_editors_publish_each_exchange_once(tmp_path: Path) -> None:
    queue = RecordingQueue()
    gemini = _runner(tmp_path, queue, editor="gemini")
    prompt, answer = "Which policy?", "drop_oldest."
    stamp = "2026-11-20T10:30:09Z"
    gemini.run(HookCall(HookAction.PROMPT, "g1", tmp_path, prompt=prompt, timestamp=stamp))
    assert queue.ids == {}  # BeforeAgent: the prompt comes again with its answer
    after = HookCall(HookAction.CAPTURE, "g1", tmp_path, prompt=prompt, response=answer,
                     timestamp=stamp)  # fmt: skip
    gemini.run(after)
    gemini.run(after)  # a repeat
    published = sorted(queue.ids.values(), key=lambda e: e.turn_index)
    assert [(e.role.value, e.content) for e in published] == [
        ("user", prompt),
        ("assistant", answer),
    ]
    assert queue.duplicates == 2

    cursor = _runner(tmp_path, queue, editor="cursor")
    cursor.run(HookCall(HookAction.PROMPT, "c1", tmp_path, prompt="Use what?", turn_id="gen-1"))
    assert len(queue.ids) == 2  # kept locally until the answer
    cursor.run(HookCall(HookAction.CAPTURE, "c1", tmp_path, response="Use RQ.", turn_id="gen-1"))
    cursor_turns = sorted((e for e in queue.ids.values() if e.content in ("Use what?", "Use RQ.")),
                          key=lambda e: e.turn_index)  # fmt: skip
    assert [(e.role.value, e.turn_index) for e in cursor_turns] == [("user", 0), ("assistant", 1)]


def test_codex_sends_the_prompt_with_its_answer_under_one_turn_id(tmp_path: Path) -> None:
    queue = RecordingQueue()
    codex = _runner(tmp_path, queue, editor="codex")
    codex.run(HookCall(HookAction.PROMPT, "x1", tmp_path, prompt="Which queue?", turn_id="t-1"))
    assert queue.ids == {}
    stop = HookCall(HookAction.CAPTURE, "x1", tmp_path, response="RQ.", turn_id="t-1")
    codex.run(stop)
    codex.run(stop)  # a repeat: the prompt is gone, the answer is a duplicate
    assert sorted((e.role.value, e.content) for e in queue.ids.values()) == [
        ("assistant", "RQ."), ("user", "Which queue?")]  # fmt: skip
    assert queue.duplicates == 1


class LookupDeadlines:
    """A distiller and recaller that answer at once and note the deadlines they were given."""

    def __init__(self) -> None:
        self.deadlines: dict[str, int] = {}

    def recap(self, _topic: object, **options: object) -> SimpleNamespace:
        self.deadlines["recap"] = int(options["deadline_ms"])  # type: ignore[call-overload]
        return SimpleNamespace(success=True, text="")

    def recall(self, _query: str, **options: object) -> SimpleNamespace:
        self.deadlines["standing"] = int(options["deadline_ms"])  # type: ignore[call-overload]
        return SimpleNamespace(success=True, results=[])


@pytest.mark.parametrize(
    ("spent_s", "expected"),
    [
        (0.0, {"recap": 8_000, "standing": 2_000}),  # four deadlines and one, as set
        (5.0, {"recap": 4_470, "standing": 2_000}),  # the editor's 10 s less 0.5 s is near
        (9.45, {}),  # less than 50 ms left: nothing looked up
    ],
)
def test_session_start_lookups_end_before_the_editors_timeout(
    tmp_path: Path, spent_s: float, expected: dict[str, int]
) -> None:
    lookups = LookupDeadlines()
    runner = HookRunner(
        spec=EDITORS["claude-code"],
        state=HookState(tmp_path / "data"),
        hasher=ScopeHasher(b"s" * 32),
        user="alice",
        consent=lambda workspace: True,
        services=HookServices(
            publisher=lambda: None,
            recaller=lambda: lookups,  # type: ignore[arg-type,return-value]
            distiller=lambda: lookups,  # type: ignore[arg-type,return-value]
        ),
        deadline_ms=2_000,
        start_budget_tokens=1500,
        started_at=100.0 - spent_s,
        clock=lambda: 100.0,
    )
    runner.run(HookCall(HookAction.SESSION_START, "cc-session-2", tmp_path))
    assert lookups.deadlines == expected
    skipped = HookState(tmp_path / "data").counters().get("start_context_skipped", 0)
    assert skipped == (0 if expected else 1)


class WindowRecaller:
    """Answers every prompt with the same two results; keeps what each request said."""

    def __init__(self) -> None:
        self.windows: list[int | None] = []

    def recall(self, query: str, **options: object) -> object:
        from turngraph.schemas.recall import RecallResponse, RecallResult, ScoreBreakdown

        self.windows.append(options.get("window_from_turn"))  # type: ignore[arg-type]
        score = ScoreBreakdown(
            final_score=1, semantic_score=1, recency_multiplier=1, status_multiplier=1
        )
        results = [
            RecallResult(text=text, created_at="2026-11-20T10:00:00+00:00", scope="workspace",
                         score=score, tokens=10, source_event_ids=[event])
            for text, event in (("The export runs on kestrelbox.", "e1"),
                                ("Money is stored as integer cents.", "e2"))
        ]  # fmt: skip
        return RecallResponse(request_id="r", success=True, results=results)


def test_the_prompt_hook_knows_the_editors_window_and_what_it_injected(tmp_path: Path) -> None:
    """Issue 34: the session's turns since the last compaction, and what the hooks already
    injected, are in the editor's window: recall leaves the first out (``window_from_turn``)
    and the block leaves the second out; a compaction empties both."""
    transcript = tmp_path / "t.jsonl"
    lines = FIXTURE.read_bytes().splitlines(keepends=True)
    boundary = next(n for n, line in enumerate(lines) if b"compact_boundary" in line)
    transcript.write_bytes(b"".join(lines[:boundary]))
    queue, recaller = RecordingQueue(), WindowRecaller()
    runner = _runner(tmp_path, queue)
    runner.services.recaller = lambda: recaller  # type: ignore[assignment,return-value]
    runner.clock = lambda: 0.0  # no time spent: the deadline is not what is tested
    runner.run(_capture(transcript, tmp_path))

    def prompt() -> str:
        call = HookCall(HookAction.PROMPT, "cc-session-1", tmp_path, transcript_path=transcript,
                        prompt="where does the export run?")  # fmt: skip
        answer = runner.run(call)
        return "" if answer is None else answer["hookSpecificOutput"]["additionalContext"]

    first = prompt()
    assert "kestrelbox" in first and "integer cents" in first
    assert prompt() == ""  # both already injected: in the window
    assert recaller.windows == [0, 0]  # never compacted: the whole session is in it

    before = len(queue.ids)  # PreCompact: capture, then the window starts after it
    runner.run(HookCall(HookAction.SUMMARIZE, "cc-session-1", tmp_path, transcript_path=transcript))
    assert "kestrelbox" in prompt()  # what was injected before compaction may come again
    transcript.write_bytes(b"".join(lines))  # the marker, and turns after it
    runner.run(_capture(transcript, tmp_path))
    assert recaller.windows[-1] == before and len(queue.ids) > before
    prompt()
    assert recaller.windows[-1] == before  # the marker at the same turn moved nothing
