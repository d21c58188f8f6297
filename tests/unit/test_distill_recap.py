"""A recap of a 200+ turn session, half of it tool calls with large outputs: it fits its
budget, ends with the unfinished work, and carries no raw tool output."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from turngraph.workers.graph.session_turns import Mention, SessionTurn
from turngraph.workers.maintenance.recap import build_recap
from turngraph.workers.maintenance.tool_calls import collapse
from turngraph.workers.recall.text import estimate_tokens

T0 = datetime(2026, 11, 3, 8, 0, tzinfo=UTC)
TOOLS = ("read_file", "edit", "bash", "ls", "status", "write", "grep")
FINDINGS = (
    "allocates a buffer per request",
    "holds a global lock while logging",
    "retries without backoff",
    "parses the config twice",
    "copies every row",
    "blocks on DNS lookups",
    "serializes with pickle",
    "leaks file handles",
    "sorts the whole table",
    "opens a socket per call",
    "recompiles its regexes",
)
TOPICS = ("the parser", "the cache layer", "the export job", "the auth middleware",
          "the retry policy", "the metrics endpoint")  # fmt: skip


def _turn(
    index: int, role: str, content: str, speaker: str = "", *mentions: Mention
) -> SessionTurn:
    return SessionTurn(
        event_id=f"e{index}",
        session_id="s_long",
        turn_index=index,
        role=role,
        content=content,
        occurred_at=T0 + timedelta(minutes=index),
        workspace="w1",
        user="u1",
        mentions=mentions,
        speaker=speaker,
    )


def _tool_output(index: int) -> str:
    return "\n".join(f"RAWOUT-{index}-{line} lorem ipsum dolor sit amet" for line in range(120))


def long_session(turns: int = 220) -> list[SessionTurn]:
    session: list[SessionTurn] = []
    for index in range(turns):
        topic = TOPICS[(index // 40) % len(TOPICS)]
        if index % 2 == 1:
            tool = TOOLS[(index // 2) % len(TOOLS)]
            path = f"src/module_{index % 7}.py"
            session.append(
                _turn(index, "tool", f"{path}\n{_tool_output(index)}", tool, Mention("File", path))
            )
        elif index % 4 == 0:
            session.append(_turn(index, "user", f"Step {index}: check {topic} again."))
        else:
            finding = FINDINGS[index % len(FINDINGS)]
            session.append(
                _turn(index, "assistant", f"Function handler_{index} {finding}; fix it next.")
            )
    session.append(
        _turn(
            turns,
            "user",
            "Next: finish moving the token cache into src/cache/tokens.py, "
            "it is half done and the tests still fail.",
        )
    )
    return session


def test_long_session_recap_fits_and_ends_with_unfinished_work() -> None:
    session = long_session()
    assert len(session) > 200 and sum(t.role == "tool" for t in session) >= 100
    recap = build_recap(session, budget_tokens=1000)
    assert recap.tokens <= 1000
    assert estimate_tokens(recap.text) <= 1000
    assert "RAWOUT" not in recap.text and "lorem ipsum" not in recap.text
    last = recap.text.splitlines()[-1]
    assert last.startswith("Where we stopped")
    assert "token cache" in last and "half done" in last
    assert recap.chunks >= len(recap.sections) >= 2, recap.text
    # sections come in session order, the recent ones preferred
    firsts = [s.first_turn for s in recap.sections]
    assert firsts == sorted(firsts)
    assert recap.sections[-1].last_turn == session[-1].turn_index


def test_small_budget_keeps_the_latest_work() -> None:
    session = long_session()
    recap = build_recap(session, budget_tokens=400)
    assert recap.tokens <= 400
    assert recap.chunks > len(recap.sections) >= 2
    assert recap.text.splitlines()[-1].startswith("Where we stopped")
    # positional scoring: what is kept is the end of the session, contiguous
    kept = [s.first_turn for s in recap.sections]
    assert kept[-1] > kept[0] >= session[len(session) // 2].turn_index
    tiny = build_recap(session, budget_tokens=150)
    assert tiny.tokens <= 150 and tiny.text.splitlines()[-1].startswith("Where we stopped")


def test_tool_turns_collapse_to_one_line_actions() -> None:
    read = _turn(1, "tool", "src/a.py\n" + "x = 1\n" * 15, "read_file", Mention("File", "src/a.py"))
    assert collapse(read) == "Read src/a.py (16 lines)."
    edit = _turn(2, "tool", "patched\n+ y = 2", "edit", Mention("File", "src/a.py"))
    assert collapse(edit) == "Edited src/a.py (2 lines)."
    run = _turn(3, "tool", "$ pytest -q\nE   AssertionError\n1 failed", "bash")
    assert collapse(run) == "Ran a command `pytest -q` (3 lines of output, failed)."
    assert collapse(_turn(4, "tool", "working...", "status")) is None
