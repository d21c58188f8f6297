"""What the hooks inject, against the real services (issue 34, "injection that helps,
once"): Claude Code's hooks run in process (``run_hook``, the entry point the editor's
command calls) against a real Redis and graph server, an ingest worker, a maintenance
worker and a recall worker.

Session 1 decides how money is stored and edits a file; session 2 starts, talks for a
while, then asks again. What session 2's hooks inject must not hold session 2's own turns
(the transcript holds them), must not hold the edited file's text (a tool's input is not a
memory) and must say the decision once across the start-up block and the prompt's block.
"""

from __future__ import annotations

import getpass
import io
import json
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.hook_services import hook_services
from tests.support.worker_processes import wait_for
from turngraph.cli.hook_cmd import run_hook
from turngraph.embedded import ServiceEndpoints
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings

pytestmark = pytest.mark.integration

DECISION = (
    "We store money as integer cents, never as float, and we do not use MongoDB, because "
    "the ledger needs exact sums and transactions."
)
FILE_TEXT = "class LedgerAmountColumn: quarkfile_marker = BigInteger(nullable=False)"
EARLIER_FACT = "The nightly export job runs on the kestrelbox host at two in the morning."
OWN_FACT = "The invoice exporter writes semicolon separated files for the zebrafinch bank."
CHATTER = [
    ("user", "Can you rename the helper in utils to parse_amount?"),
    ("assistant", "Renamed the helper to parse_amount and updated its two callers."),
    ("user", "Now add a docstring to parse_amount saying it returns cents."),
    ("assistant", "Added the docstring to parse_amount."),
    ("user", "Run the linter on the utils module please."),
    ("assistant", "The linter is clean on the utils module."),
]


@dataclass
class Live:
    env: dict[str, str]
    root: Path
    settings: Settings


@pytest.fixture(scope="module")
def live(embedded: ServiceEndpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("injection")
    with hook_services(embedded, root, home=root / "home") as services:
        yield Live(services.env, root, services.settings)


class Transcript:
    """A Claude Code transcript the test writes line by line, as the editor does."""

    def __init__(self, path: Path, session: str) -> None:
        self.path, self.session, self.n = path, session, 0

    def say(self, role: str, content: Any) -> None:
        self.n += 1
        line = {
            "type": role,
            "uuid": f"{self.session}-{self.n}",
            "sessionId": self.session,
            "isSidechain": False,
            "timestamp": f"2026-11-20T10:{self.n:02d}:00.000Z",
            "message": {"role": role, "content": content},
        }
        with self.path.open("a") as out:
            out.write(json.dumps(line) + "\n")

    def compacted(self) -> None:
        line = {"type": "system", "subtype": "compact_boundary", "uuid": f"c-{self.n}"}
        with self.path.open("a") as out:
            out.write(json.dumps(line) + "\n")


def _hook(
    live: Live,
    monkeypatch: pytest.MonkeyPatch,
    event: str,
    action: str,
    project: Path,
    transcript: Transcript,
    **fields: Any,
) -> str:
    """One Claude Code hook call; the context it hands the model ("" for none)."""
    for name, value in live.env.items():
        if name.startswith("TURNGRAPH_") or name == "HOME":
            monkeypatch.setenv(name, value)
    payload = {
        "session_id": transcript.session,
        "transcript_path": str(transcript.path),
        "cwd": str(project),
        "hook_event_name": event,
        **fields,
    }
    out = io.StringIO()
    stdin = io.BytesIO(json.dumps(payload).encode())
    run_hook(
        [action, "--editor", "claude-code"],
        stdin=stdin,
        stdout=out,
        environ={},
        started_at=time.monotonic(),  # the deadline counts from the call, not pytest's start
    )
    if not out.getvalue():
        return ""
    return str(json.loads(out.getvalue())["hookSpecificOutput"]["additionalContext"])


def _recallable(live: Live, project: Path, text: str) -> bool:
    hasher = ScopeHasher.for_data_dir(live.settings.data_dir)
    workspace = hasher.workspace(str(project.resolve()))
    user = hasher.user(getpass.getuser())
    recaller = RecallClient(redis.Redis.from_url(str(live.settings.redis_url)))
    found = recaller.recall(text, workspace=workspace, user=user, deadline_ms=3000)
    return any(text in r.text for r in found.results)


@pytest.fixture(scope="module")
def sessions(live: Live) -> dict[str, Any]:
    """Session 1 decided and edited a file; session 2 started, talked, and asks."""
    monkeypatch = pytest.MonkeyPatch()
    project = live.root / "project"
    project.mkdir()
    hasher = ScopeHasher.for_data_dir(live.settings.data_dir)
    ConsentStore(live.settings.data_dir).enable(
        hasher.workspace(str(project.resolve())),
        consent_endpoint(live.settings.redis_url, live.settings.data_dir),
    )
    try:
        one = Transcript(project / "s1.jsonl", "session-one")
        one.say("user", EARLIER_FACT)
        one.say("assistant", [{"type": "text", "text": "Good to know about the export."}])
        one.say("user", DECISION)
        one.say("assistant", [{"type": "text", "text": "Agreed: " + DECISION}])
        edit = {"file_path": "/p/ledger.py", "old_string": "x", "new_string": FILE_TEXT}
        one.say("assistant", [{"type": "tool_use", "id": "t-1", "name": "Edit", "input": edit}])
        one.say("assistant", [{"type": "text", "text": "The ledger column is now an integer."}])
        _hook(live, monkeypatch, "Stop", "capture", project, one)
        _hook(live, monkeypatch, "SessionEnd", "session-end", project, one)
        assert wait_for(lambda: _recallable(live, project, "integer cents"), 90)

        two = Transcript(project / "s2.jsonl", "session-two")
        start = _hook(live, monkeypatch, "SessionStart", "session-start", project, two)
        two.say("user", OWN_FACT)
        two.say("assistant", [{"type": "text", "text": "Noted: semicolons for zebrafinch."}])
        for role, text in CHATTER:
            two.say(role, text)
        _hook(live, monkeypatch, "Stop", "capture", project, two)
        assert wait_for(lambda: _recallable(live, project, "zebrafinch"), 90)
        question = (
            "Which separator does the zebrafinch invoice exporter use, and how is money stored?"
        )
        prompt = _hook(
            live, monkeypatch, "UserPromptSubmit", "prompt", project, two, prompt=question
        )
        return {"start": start, "prompt": prompt, "project": project, "two": two}
    finally:
        monkeypatch.undo()


def test_a_second_prompt_injects_no_turn_of_its_own_session(sessions: dict[str, Any]) -> None:
    prompt = sessions["prompt"]
    assert EARLIER_FACT in prompt  # the earlier session still answers
    assert "zebrafinch" not in prompt  # said at this session's start: the transcript has it
    for _, text in CHATTER:
        assert text not in prompt


def test_a_decision_stated_once_is_injected_once(sessions: dict[str, Any]) -> None:
    injected = sessions["start"] + "\n" + sessions["prompt"]
    assert "integer cents" in sessions["start"]
    assert injected.count("integer cents") == 1, injected
    assert "never as float, and we do not use MongoDB" not in injected.replace(DECISION, "")


def test_a_tool_calls_file_text_is_never_injected(
    live: Live, sessions: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    injected = sessions["start"] + "\n" + sessions["prompt"]
    assert "quarkfile_marker" not in injected
    # Asked for by its own words, in a session of its own: still not an item.
    three = Transcript(sessions["project"] / "s3.jsonl", "session-three")
    asked = _hook(
        live, monkeypatch, "UserPromptSubmit", "prompt", sessions["project"], three,
        prompt="what is the LedgerAmountColumn quarkfile_marker BigInteger in ledger.py?",
    )  # fmt: skip
    assert "quarkfile_marker" not in asked and "BigInteger" not in asked


def test_a_prompt_with_a_pasted_log_still_gets_its_memory(
    live: Live, sessions: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prompt longer than a recall query (a pasted log with the question after it) is
    asked by its beginning and its end: before, its recall was refused (`query` too long)
    and nothing was injected."""
    log = "".join(
        f"2026-11-20 10:{n % 60:02d}:00 ERROR worker-{n} job {n} failed: timeout after 30 s\n"
        for n in range(120)
    )
    assert len(log) > 6_000
    four = Transcript(sessions["project"] / "s4.jsonl", "session-four")
    asked = _hook(
        live, monkeypatch, "UserPromptSubmit", "prompt", sessions["project"], four,
        prompt=log + "\nThe ledger sums are off again: how do we store money?",
    )  # fmt: skip
    assert "integer cents" in asked, asked
