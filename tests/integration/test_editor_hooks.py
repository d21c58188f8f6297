"""Editor hooks end to end, run exactly as each editor's configuration says.

For each editor: ``turngraph hooks install EDITOR --project --via command`` writes its file
(the ``turngraph hook`` commands; the forwarder and http hooks are test_real_clients'); the
commands in that file are run the way the editor runs them (``bash -c COMMAND``, the
documented payload on stdin, the editor's variables, its timeout) against the real
services: an ingest worker, a maintenance worker and a recall worker. The editor kills a hook
at its timeout: here that timeout bounds the hook's CPU time, and three times it its wall
time (four test processes share two cores at load up to 25, where starting Python alone has
passed 10 s: ``hook capture`` timed out so in a full run at load 17). The hook's own waits
ending inside the editor's timeout are unit-tested
(``test_hook_runner::test_session_start_lookups_end_before_the_editors_timeout``). Session 1
makes a decision; session 2's start-up context contains it, and its first prompt's context
(where the editor takes one) does not give it again. Uninstall gives the file back as it was.
"""

from __future__ import annotations

import copy
import json
import math
import resource
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import redis

from tests.support.hook_services import hook_services
from tests.support.worker_processes import wait_for
from turngraph.clients import Clients
from turngraph.embedded import ServiceEndpoints
from turngraph.producers.consent import ConsentStore, consent_endpoint
from turngraph.producers.hooks.config import is_ours
from turngraph.producers.hooks.editors import EDITORS, entry_commands
from turngraph.producers.hooks.state import HookState
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scopes import ScopeHasher

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "data" / "hooks"
PAYLOADS = json.loads((FIXTURES / "payloads.json").read_text())
DECISION = "drop_oldest"
WALL_TIME_SLACK = 3
"""A hook's wall-time bound, in editor timeouts (its CPU time is held to one)."""
PROJECT_VARIABLE = {"claude-code": "CLAUDE_PROJECT_DIR", "gemini": "GEMINI_PROJECT_DIR"}
PROMPT_EVENT = {
    "claude-code": "UserPromptSubmit",
    "copilot-cli": "userPromptTransformed",
    "cursor": "beforeSubmitPrompt",
    "gemini": "BeforeAgent",
    "codex": "UserPromptSubmit",
}
START_EVENT = {
    "claude-code": "SessionStart",
    "vscode": "SessionStart",
    "copilot-cli": "sessionStart",
    "cursor": "sessionStart",
    "gemini": "SessionStart",
    "codex": "SessionStart",
}
CAPTURE_EVENTS = {
    "claude-code": ["Stop", "SessionEnd"],
    "vscode": ["Stop", "PreCompact"],
    "copilot-cli": ["agentStop", "sessionEnd"],
    "cursor": ["beforeSubmitPrompt", "afterAgentResponse", "sessionEnd"],
    "gemini": ["AfterAgent", "SessionEnd"],
    "codex": ["UserPromptSubmit", "Stop", "PreCompact"],
}


@dataclass
class Live:
    clients: Clients
    env: dict[str, str]
    home: Path
    root: Path


@pytest.fixture(scope="module")
def live(embedded: ServiceEndpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("hooks")
    with hook_services(embedded, root, home=root / "home") as services:
        yield Live(services.clients, services.env, root / "home", root)


def _our_commands(config: dict[str, Any], event: str, editor: str) -> list[tuple[str, float]]:
    """The commands (and timeouts in seconds) our install put under ``event``."""
    found = []
    for entry in config["hooks"].get(event, []):
        for hook in entry.get("hooks", [entry]):
            for command in entry_commands(hook):
                if is_ours(command) and f"--editor {editor}" in command:
                    if "timeoutSec" in hook:
                        seconds = float(hook["timeoutSec"])
                    elif EDITORS[editor].shape == "gemini":
                        seconds = hook["timeout"] / 1000
                    else:
                        seconds = float(hook["timeout"])
                    found.append((command, seconds))
                    break  # bash and powershell: the same command, run once
    return found


def _fill(payload: Any, **values: str) -> Any:
    text = json.dumps(payload)
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return json.loads(text)


def _run_event(
    live: Live,
    editor: str,
    config: dict[str, Any],
    event: str,
    payload: dict[str, Any],
    project: Path,
) -> list[dict[str, Any]]:
    env = {**live.env}
    if editor in PROJECT_VARIABLE:
        env[PROJECT_VARIABLE[editor]] = str(project)
    answers = []
    commands = _our_commands(config, event, editor)
    assert commands, f"no turngraph hook installed for {editor} {event}"
    for command, timeout_s in commands:
        cpu_s = math.ceil(timeout_s)

        def editors_timeout_in_cpu_time(cpu_s: int = cpu_s) -> None:
            resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))

        done = subprocess.run(
            ["bash", "-c", command],
            input=json.dumps(payload).encode(),
            env=env,
            cwd=project,
            capture_output=True,
            timeout=timeout_s * WALL_TIME_SLACK,
            preexec_fn=editors_timeout_in_cpu_time,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        assert b"Traceback" not in done.stderr
        if done.stdout.strip():
            answers.append(json.loads(done.stdout))
    return answers


def _context(editor: str, answer: dict[str, Any]) -> str:
    if "hookSpecificOutput" in answer:
        return str(answer["hookSpecificOutput"]["additionalContext"])
    for key in ("additionalContext", "additional_context", "modifiedTransformedPrompt"):
        if key in answer:
            return str(answer[key])
    raise AssertionError(f"{editor}: unexpected answer {answer}")


def _session_payload(
    editor: str, event: str, session: str, project: Path, transcript: Path
) -> dict[str, Any]:
    payload = copy.deepcopy(PAYLOADS[editor][event])
    filled = _fill(payload, cwd=str(project), transcript=str(transcript))
    for key in ("session_id", "sessionId", "conversation_id"):
        if key in filled:
            filled[key] = session
    if "generation_id" in filled:
        filled["generation_id"] = f"{session}-{filled['generation_id']}"
    return filled


@pytest.mark.parametrize("editor", sorted(EDITORS))
def test_session_2_starts_with_what_session_1_decided(live: Live, editor: str) -> None:
    project = live.root / f"project-{editor}"
    project.mkdir()
    settings = live.clients.settings
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    ConsentStore(settings.data_dir).enable(
        hasher.workspace(str(project.resolve())),
        consent_endpoint(settings.redis_url, settings.data_dir),
    )
    installed = subprocess.run(
        [sys.executable, "-m", "turngraph", "hooks", "install", editor, "--folder", str(project),
         "--via", "command"],
        env=live.env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    path = Path(json.loads(installed.stdout)["file"])
    config = json.loads(path.read_text())
    s1, s2 = f"{editor}-session-1", f"{editor}-session-2"

    # Session 1: the decision is made and captured.
    transcript = project / "session-1.jsonl"
    fixture = "copilot-cli" if editor in ("copilot-cli", "vscode") else "claude-code"
    transcript.write_bytes((FIXTURES / f"{fixture}.jsonl").read_bytes())
    for event in CAPTURE_EVENTS[editor]:
        payload = _session_payload(editor, event, s1, project, transcript)
        if "prompt" in payload:
            payload["prompt"] = "Decision: the ingest queue uses drop_oldest when it is full."
        answers = _run_event(live, editor, config, event, payload, project)
        if event != PROMPT_EVENT.get(editor):  # a prompt hook may find other memories
            assert answers == []

    workspace, user = hasher.workspace(str(project.resolve())), hasher.user(_login())
    recaller = RecallClient(redis.Redis.from_url(str(settings.redis_url)))

    def recallable() -> bool:
        query = "which drop policy does the ingest queue use"
        found = recaller.recall(query, workspace=workspace, user=user, deadline_ms=2000)
        return any(DECISION in r.text for r in found.results)

    assert wait_for(recallable, 60), "session 1's turns never became recallable"

    # Session 2: its start-up context and its first prompt's context hold the decision.
    start = _session_payload(editor, START_EVENT[editor], s2, project, project / "s2.jsonl")
    answers = _run_event(live, editor, config, START_EVENT[editor], start, project)
    assert len(answers) == 1, answers
    assert DECISION in _context(editor, answers[0])
    if editor in PROMPT_EVENT:
        event = PROMPT_EVENT[editor]
        prompt = _session_payload(editor, event, s2, project, project / "s2.jsonl")
        held_before = HookState(settings.data_dir).counters().get("recall_all_held", 0)
        answers = _run_event(live, editor, config, event, prompt, project)
        if EDITORS[editor].prompt_context:
            counters = HookState(settings.data_dir).counters()
            # What the start-up block gave is not given again (issue 34): the prompt gets
            # a block of what is new, or none when every result was given already.
            held = counters.get("recall_all_held", 0) > held_before
            assert len(answers) == 1 or held, f"{answers} {json.dumps(counters)}"
            if answers:
                context = _context(editor, answers[0])
                assert "<memory>" in context
                if editor == "copilot-cli":
                    assert context.endswith(prompt["transformedPrompt"])
        else:
            assert answers == []  # Cursor's prompt hook takes no context

    uninstalled = subprocess.run(
        [sys.executable, "-m", "turngraph", "hooks", "uninstall", editor, "--folder", str(project)],
        env=live.env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    assert json.loads(uninstalled.stdout)["action"] == "removed" and not path.exists()


def _login() -> str:
    import getpass

    return getpass.getuser()


def test_repeats_overlaps_huge_lines_and_bad_payloads_as_claude_code_sends_them(
    live: Live,
) -> None:
    """The installed Stop command, run again and twice at once, publishes nothing more; a
    10 MB transcript line and a malformed payload give exit 0, no output, a counted error."""
    from turngraph.producers.bounded_queue import read_stats
    from turngraph.producers.hooks.state import HookState

    editor, project = "claude-code", live.root / "project-repeats"
    project.mkdir()
    settings = live.clients.settings
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    ConsentStore(settings.data_dir).enable(
        hasher.workspace(str(project.resolve())),
        consent_endpoint(settings.redis_url, settings.data_dir),
    )
    subprocess.run(
        [sys.executable, "-m", "turngraph", "hooks", "install", editor, "--folder", str(project),
         "--via", "command"],
        env=live.env, capture_output=True, timeout=60, check=True,
    )  # fmt: skip
    config = json.loads((project / ".claude" / "settings.local.json").read_text())
    transcript = project / "t.jsonl"
    transcript.write_bytes((FIXTURES / "claude-code.jsonl").read_bytes())
    stop_payload = _session_payload(editor, "Stop", "repeats-1", project, transcript)
    conn = redis.Redis.from_url(str(settings.redis_url))

    def enqueued() -> int:
        return read_stats(conn, settings.ingest_queue).enqueued

    before = enqueued()
    _run_event(live, editor, config, "Stop", stop_payload, project)
    first = enqueued()
    assert first - before == 9  # the fixture's nine turns
    threads = [
        threading.Thread(
            target=_run_event, args=(live, editor, config, "Stop", stop_payload, project)
        )
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert enqueued() == first  # repeated and overlapping calls: nothing twice

    counters = HookState(settings.data_dir)
    too_long = counters.counters().get("error_line_too_long", 0)
    huge = json.dumps({"type": "user", "uuid": "huge", "message": {"role": "user",
                       "content": "x" * 10_000_000}})  # fmt: skip
    with transcript.open("a") as out:
        out.write(huge + "\n")
        after = {"role": "user", "content": "after the huge line"}
        out.write(json.dumps({"type": "user", "uuid": "after-huge", "message": after}) + "\n")
    assert _run_event(live, editor, config, "Stop", stop_payload, project) == []
    assert counters.counters()["error_line_too_long"] == too_long + 1
    assert enqueued() == first + 1  # the line after it

    bad = counters.counters().get("error_bad_payload", 0)
    for command, timeout_s in _our_commands(config, "UserPromptSubmit", editor):
        done = subprocess.run(["bash", "-c", command], input=b"{not json", env=live.env,
                              cwd=project, capture_output=True, timeout=timeout_s)  # fmt: skip
        assert (done.returncode, done.stdout) == (0, b"") and b"Traceback" not in done.stderr
    assert counters.counters()["error_bad_payload"] == bad + 1
