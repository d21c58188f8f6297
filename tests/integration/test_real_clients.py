"""The editors' own CLIs, run headless against a scripted model server on loopback, with
turngraph's hooks installed by ``turngraph hooks install`` and real workers behind them.

Claude Code (``claude -p`` with ``ANTHROPIC_BASE_URL``), Codex (``codex exec`` with a
custom model provider in its ``config.toml``) and Gemini CLI (``gemini -p`` with
``GOOGLE_GEMINI_BASE_URL``) fire every hook as in real use and write their own transcripts.
Session 1 makes a decision; its turns are captured and ingested by a real ingest worker;
session 2's request to the model carries the decision, at most twice; with turngraph's
services down a run answers with no error shown. The CLIs come from
``tests/clients/package.json`` (``make install-dev`` runs ``npm ci`` there).
"""

from __future__ import annotations

import getpass
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

from bench.hooks_endpoint import start_endpoint, stop_endpoint
from tests.support.hook_services import hook_services
from tests.support.model_server import ModelServer, model_server
from tests.support.worker_processes import wait_for
from turngraph.clients import Clients
from turngraph.embedded import ServiceEndpoints
from turngraph.producers.hooks.state import HookState
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scopes import ScopeHasher

pytestmark = pytest.mark.integration

BIN = Path(__file__).parents[1] / "clients" / "node_modules" / ".bin"
DECIDED = "Agreed: we'll use Postgres 16 for orders"
DECISION = "Postgres 16"
ASKED = "Which database did we pick for the orders service?"
ANSWER = "Noted: Postgres 16 for the orders service."


def _client(name: str) -> Path:
    path = BIN / name
    if shutil.which("npm") is None or not path.exists():
        pytest.skip(f"{name} not installed (npm ci --prefix tests/clients, or make install-dev)")
    return path


@dataclass
class Live:
    clients: Clients
    env: dict[str, str]
    root: Path


@pytest.fixture(scope="module")
def live(embedded: ServiceEndpoints, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Live]:
    root = tmp_path_factory.mktemp("real-clients")
    with hook_services(embedded, root) as services:
        yield Live(services.clients, services.env, root)


def _install(live: Live, editor: str, project: Path, home: Path) -> None:
    """As a user installs them: Claude Code's http hooks at user level (the token stays out
    of the project), the forwarder for the others."""
    via = ["--user", "--via", "http"] if editor == "claude-code" else ["--via", "forwarder"]
    done = subprocess.run(
        [sys.executable, "-m", "turngraph", "hooks", "install", editor, "--folder", str(project),
         "--consent", *via],
        env={**live.env, "HOME": str(home)}, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["consent"] is True


def _environ(live: Live, home: Path, **env: str) -> dict[str, str]:
    drop = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_")
    environ = {k: v for k, v in live.env.items() if not k.startswith(drop)}
    return {**environ, "HOME": str(home), **env}


def _run(
    argv: list[str], project: Path, environ: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=project, env=environ, stdin=subprocess.DEVNULL, capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def _claude(model: ModelServer, live: Live, project: Path, home: Path, prompt: str,
            **env: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    environ = _environ(
        live, home, ANTHROPIC_BASE_URL=model.url, ANTHROPIC_API_KEY="sk-scripted",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1", **env,
    )  # fmt: skip
    return _run([str(_client("claude")), "-p", prompt], project, environ)


def _codex(model: ModelServer, live: Live, project: Path, home: Path, prompt: str,
           **env: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    codex_home = home / ".codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(
        f'model = "gpt-5.1"\nmodel_provider = "scripted"\n'
        f'[model_providers.scripted]\nname = "scripted"\nbase_url = "{model.url}/v1"\n'
        f'wire_api = "responses"\nenv_key = "SCRIPTED_API_KEY"\n'
        f'[projects."{project}"]\ntrust_level = "trusted"\n'
    )
    environ = _environ(live, home, CODEX_HOME=str(codex_home), SCRIPTED_API_KEY="sk-scripted",
                       **env)  # fmt: skip
    # codex exec has no hook review: untrusted hooks are skipped silently without the flag
    # (interactive users trust them once with /hooks).
    argv = [str(_client("codex")), "exec", "--dangerously-bypass-hook-trust",
            "--skip-git-repo-check", prompt]  # fmt: skip
    return _run(argv, project, environ)


def _gemini(model: ModelServer, live: Live, project: Path, home: Path, prompt: str,
            **env: str) -> subprocess.CompletedProcess[str]:  # fmt: skip
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir(parents=True, exist_ok=True)
    settings.write_text(json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}}))
    environ = _environ(live, home, GEMINI_API_KEY="scripted", GOOGLE_GEMINI_BASE_URL=model.url,
                       GEMINI_CLI_TRUST_WORKSPACE="true", **env)  # fmt: skip
    return _run([str(_client("gemini")), "-p", prompt], project, environ)


Runner = Callable[..., subprocess.CompletedProcess[str]]
CLIENTS: dict[str, tuple[str, Runner, str]] = {
    "claude-code": ("claude", _claude, "/messages"),
    "codex": ("codex", _codex, "/responses"),
    "gemini": ("gemini", _gemini, "treamGenerateContent"),
}
"""Editor: its npm binary, how it runs headless, the path of its conversation requests."""

_SHOWN = re.compile(r"\b(errors?|fail(ed|ure)?|traceback|exception|refused)\b", re.IGNORECASE)


def _errors_shown(stderr: str) -> list[str]:
    """What a user would read as an error on the client's stderr. Not: the clients' banners,
    their own warnings (no sandbox, colours, ripgrep), their notes that hooks ran, Gemini
    CLI's list of a project's hooks, Codex's note that hook review is bypassed."""
    return [line for line in stderr.splitlines() if _SHOWN.search(line)]


def _graph_holds(live: Live, project: Path) -> bool:
    settings = live.clients.settings
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    recaller = RecallClient(redis.Redis.from_url(str(settings.redis_url)))
    found = recaller.recall(
        "which database for orders", workspace=hasher.workspace(str(project.resolve())),
        user=hasher.user(getpass.getuser()), deadline_ms=2000,
    )  # fmt: skip
    return any(DECISION in r.text for r in found.results)


@dataclass
class Sessions:
    """Three headless runs in one project: the decision, the question, services down."""

    first: subprocess.CompletedProcess[str]
    second: subprocess.CompletedProcess[str]
    down: subprocess.CompletedProcess[str]
    asked: str
    """Session 2's request to the model (the largest that holds the question)."""
    published: int


@pytest.fixture(scope="module", params=sorted(CLIENTS))
def sessions(live: Live, request: pytest.FixtureRequest) -> Sessions:
    editor = request.param
    binary, runner, conversation = CLIENTS[editor]
    _client(binary)
    project, home = live.root / f"{editor}-project", live.root / f"{editor}-home"
    project.mkdir()
    home.mkdir()
    served = start_endpoint(live.env, live.clients.settings.data_dir)
    try:
        _install(live, editor, project, home)
        state = HookState(live.clients.settings.data_dir)
        before = state.counters().get("published", 0)
        with model_server(ANSWER) as model:
            first = runner(model, live, project, home, DECIDED)
            assert wait_for(lambda: _graph_holds(live, project), 120), (
                f"session 1 never became recallable: {first.stderr[-2000:]} {state.counters()}"
            )
            published = state.counters().get("published", 0) - before
            second = runner(model, live, project, home, ASKED)
            asked = [r for r in model.conversation_requests(ASKED)
                     if r.path.endswith(conversation)]  # fmt: skip
            assert asked, [r.path for r in model.requests]
            stop_endpoint(served)  # turngraph down: what `turngraph down` leaves
            third = runner(model, live, project, home, "And for invoices?")
    finally:
        stop_endpoint(served)
    body = max(asked, key=lambda r: len(r.text())).text()
    return Sessions(first, second, third, body, published)


def test_session_1_is_captured_through_the_clients_own_hooks(sessions: Sessions) -> None:
    first = sessions.first
    assert (first.returncode, first.stdout.strip()) == (0, ANSWER), first.stderr[-2000:]
    assert _errors_shown(first.stderr) == []
    assert sessions.published >= 2  # the user's turn and the answer


def test_session_2_asks_the_model_with_session_1s_decision(sessions: Sessions) -> None:
    second = sessions.second
    assert (second.returncode, second.stdout.strip()) == (0, ANSWER), second.stderr[-2000:]
    assert DECISION in sessions.asked, "session 2's request does not carry the decision"


def test_session_2_carries_the_decision_at_most_twice(sessions: Sessions) -> None:
    assert sessions.asked.count(DECISION) <= 2, sessions.asked.count(DECISION)


def test_with_turngraph_down_the_client_answers_with_no_error_shown(sessions: Sessions) -> None:
    down = sessions.down
    assert (down.returncode, down.stdout.strip()) == (0, ANSWER), down.stderr[-2000:]
    assert _errors_shown(down.stderr) == []


def test_claude_code_without_turngraph_is_the_reference(live: Live) -> None:
    """The scripted run with no hooks: the model server answers it the same, and nothing of
    session 1 reaches a project that has no hooks."""
    project, home = live.root / "bare-project", live.root / "bare-home"
    project.mkdir()
    home.mkdir()
    with model_server(ANSWER) as model:
        done = _claude(model, live, project, home, ASKED)
    assert (done.returncode, done.stdout.strip(), done.stderr) == (0, ANSWER, "")
    assert DECISION not in model.conversation_requests(ASKED)[0].text()
