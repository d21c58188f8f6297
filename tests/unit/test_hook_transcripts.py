"""Transcript reading for editor hooks: both formats from the fixtures, lines still being
written, lines too long to load, the collapsed tool calls."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from turngraph.producers.hooks.tools import collapse_tool_call
from turngraph.producers.hooks.transcripts import ParseCounts, parse_lines, read_new_lines

FIXTURES = Path(__file__).parents[1] / "data" / "hooks"

EXPECTED = [
    ("user", "", "decision: the ingest queue uses drop_oldest"),
    ("tool", "read", "producers/bounded_queue.py"),
    ("tool", "edit", "bounded_queue.py"),  # the file, never its text
    ("tool", "bash", "$ pytest -q tests/unit/test_bounded_queue.py"),
    ("tool", "task", "Delegated to a subagent: Check other queues"),
    ("assistant", "", "evicts the oldest job"),
    ("user", "", "Here is the dashboard after the change.\n[image]"),
]


def _turns(name: str) -> tuple[list, ParseCounts]:
    lines = (FIXTURES / f"{name}.jsonl").read_bytes().splitlines(keepends=True)
    counts = ParseCounts()
    return list(parse_lines(lines, counts)), counts


@pytest.mark.parametrize("name", ["claude-code", "copilot-cli"])
def test_both_transcript_formats_give_the_same_turns(name: str) -> None:
    turns, counts = _turns(name)
    for turn, (role, speaker, text) in zip(turns, EXPECTED, strict=False):
        assert (turn.role, turn.speaker) == (role, speaker)
        assert text in turn.content
    assert turns[-1].role == "user" and "docs/operations.md" in turns[-1].content
    everything = "\n".join(t.content for t in turns)
    for absent in ("RAWOUT", "SIDECHAIN", "COMPACTSUMMARY", "private reasoning", "todos",
                   "DROP_OLDEST"):  # fmt: skip
        assert absent not in everything  # results, subagents, compaction, thinking, meta, edits
    assert counts.sidechain >= 2 and counts.compaction >= 2 and counts.malformed == 0
    assert len({t.source_id for t in turns}) == len(turns)  # the transcript's own ids


def test_an_image_only_message_and_the_timestamps() -> None:
    turns, _ = _turns("claude-code")
    assert any(t.content == "(shared an image)" for t in turns)
    assert all(t.occurred_at is not None and t.occurred_at.tzinfo for t in turns)


def test_a_line_cut_mid_way_is_left_for_the_next_read() -> None:
    whole = b'{"type": "user", "uuid": "x"}\n'
    stream = io.BytesIO(whole + b'{"type": "assis')
    first = read_new_lines(stream, 0)
    assert first.lines == [whole] and first.end_offset == len(whole)
    stream = io.BytesIO(whole + b'{"type": "assistant"}\n')
    second = read_new_lines(stream, first.end_offset)
    assert second.lines == [b'{"type": "assistant"}\n']


def test_a_ten_megabyte_line_is_skipped_counted_and_never_loaded_whole() -> None:
    huge = b'{"type": "user", "message": {"content": "' + b"x" * 10_000_000 + b'"}}\n'
    after = b'{"type": "user", "uuid": "after"}\n'
    stream = io.BytesIO(b"\n" + huge + after)
    read = read_new_lines(stream, 0, max_line_bytes=1_000_000)
    assert read.skipped_long == 1 and read.lines == [after]
    assert read.end_offset == 1 + len(huge) + len(after)
    unfinished = io.BytesIO(b"y" * 3_000_000)  # a long line still being written
    assert read_new_lines(unfinished, 0).end_offset == 0


def test_malformed_lines_are_counted_not_fatal() -> None:
    counts = ParseCounts()
    lines = [
        b"not json\n",
        b"[1, 2]\n",
        b'{"type": "user", "message": "x"}\n',
        b'{"type": "x.y"}\n',
    ]
    assert list(parse_lines(lines, counts)) == []
    assert counts.malformed == 4


@pytest.mark.parametrize(
    ("name", "args", "expected"),
    [
        ("Read", {"file_path": "src/a.py"}, ("read", "src/a.py")),
        ("Grep", {"pattern": "TODO", "path": "src"}, ("grep", "src")),
        ("run_shell_command", {"command": "make test"}, ("bash", "$ make test")),
        ("Write", {"file_path": "b.py", "content": "print(1)"}, ("write", "b.py")),
        ("Edit", {"file_path": "c.py", "new_string": "x = 1"}, ("edit", "c.py")),
        (
            "mcp__github__create_issue",
            '{"title": "x"}',
            ("mcp__github__create_issue", '{"title": "x"}'),
        ),
    ],
)
def test_tool_calls_collapse(name: str, args: object, expected: tuple[str, str]) -> None:
    assert collapse_tool_call(name, args) == expected


def test_meta_tools_are_dropped_and_details_are_short() -> None:
    assert collapse_tool_call("TodoWrite", {"todos": []}) is None
    speaker, content = collapse_tool_call("Edit", {"file_path": "a", "new_string": "z" * 5000}) or (
        "",
        "",
    )
    assert (speaker, content) == ("edit", "a")  # the file's text is never kept
    assert json.loads(json.dumps(content))  # plain text


def test_a_line_nested_past_the_parser_is_malformed_and_the_turns_around_it_are_read() -> None:
    # json.loads raised RecursionError: the hook failed on every later call, so no turn
    # of that transcript after it was ever published.
    def user(uuid: str, text: str) -> bytes:
        entry = {"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}
        return json.dumps(entry).encode() + b"\n"

    deep = b'{"type": "user", "message": {"content": ' + b"[" * 200_000 + b"]" * 200_000
    lines = [user("u-1", "before"), deep + b"}}\n", user("u-2", "after")]
    counts = ParseCounts()
    turns = list(parse_lines(lines, counts))
    assert [turn.content for turn in turns] == ["before", "after"]
    assert counts.malformed == 1
    nested_arguments = "[" * 200_000 + "]" * 200_000
    assert collapse_tool_call("run_in_terminal", nested_arguments) is not None


class _Endless(io.RawIOBase):
    """Bytes without a newline, for ever (``/dev/zero`` as a transcript path)."""

    def __init__(self) -> None:
        self.reads = 0

    def readable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return offset

    def readline(self, size: int | None = -1) -> bytes:
        self.reads += 1
        assert self.reads < 100_000, "read for ever"  # what the hook did until killed
        return b"\0" * (size if size and size > 0 else 4096)


def test_a_line_that_never_ends_is_read_at_most_the_read_limit_per_call() -> None:
    endless = _Endless()
    read = read_new_lines(endless, 0, max_line_bytes=1_000, max_read_bytes=50_000)  # type: ignore[arg-type]
    assert read.lines == [] and read.skipped_long == 1
    assert 50_000 <= read.end_offset < 50_000 + 1_001 and endless.reads < 100
