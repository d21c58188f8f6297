"""``turngraph scopes`` finds what an editor published from a folder, by the folder's
name; commands taking a scope accept the folder itself (hashed like the producer)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from turngraph.app import build_pipeline
from turngraph.cli import main
from turngraph.clients import Clients
from turngraph.producers.consent import ConsentStore
from turngraph.producers.operations.backend import Backend
from turngraph.producers.operations.core import Operations
from turngraph.producers.publisher import Publisher
from turngraph.producers.scope_hints import HINTS_FILE, ScopeHints
from turngraph.producers.scopes import ScopeHasher

pytestmark = pytest.mark.integration


@pytest.fixture
def project(clients: Clients, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    settings = clients.settings
    assert settings.redis_url
    folder = tmp_path / "checkout" / "my-project"
    folder.mkdir(parents=True)
    monkeypatch.chdir(folder)
    for name, value in {
        "TURNGRAPH_REDIS_URL": settings.redis_url,
        "TURNGRAPH_GRAPH_URI": settings.graph_uri,
        "TURNGRAPH_GRAPH_USER": settings.graph_user,
        "TURNGRAPH_GRAPH_PASSWORD": settings.graph_password.get_secret_value(),
        "TURNGRAPH_GRAPH_DATABASE": settings.graph_database,
        "TURNGRAPH_DATA_DIR": str(settings.data_dir),
    }.items():
        if value is not None:
            monkeypatch.setenv(name, str(value))
    hasher = ScopeHasher.for_data_dir(settings.data_dir)
    consent = ConsentStore(settings.data_dir)
    consent.enable(hasher.workspace(str(folder)), "redis://test")
    publisher = Publisher(redis_url=settings.redis_url)
    bridge = Operations(
        hasher=hasher,
        consent=consent,
        hints=ScopeHints(settings.data_dir),
        backend=Backend(endpoint="redis://test", publisher=publisher, recaller=None),
    )
    events = []
    for index, text in enumerate(["we pin ruff to 0.6", "and run mypy in CI"]):
        raw = {
            "session_id": "chat-42",
            "workspace": str(folder),
            "user": "alice",
            "turn_index": index,
            "role": "user",
            "content": text,
            "client": {"name": "tests", "version": "1"},
        }
        assert bridge.handle_request({"op": "publish", "event": raw})["success"]
        events.append(bridge.build_event(raw))
    bridge.close()
    build_pipeline(clients).ingest(events)
    return folder


def test_scopes_lists_the_folder_by_name_with_counts(
    project: Path, capsys: pytest.CaptureFixture[str], clients: Clients
) -> None:
    assert main(["scopes", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 1
    workspace = rows[0]
    assert workspace["folder"] == "my-project" and workspace["here"] is True
    assert workspace["id"].startswith("w_") and workspace["turns"] == 2
    assert [s["turns"] for s in workspace["sessions"]] == [2]
    assert workspace["first_turn"] and workspace["sessions"][0]["id"].startswith("s_")

    assert main(["scopes"]) == 0
    table = capsys.readouterr().out
    assert "my-project (here)" in table and workspace["id"] in table

    hints = (clients.settings.data_dir / HINTS_FILE).read_text()
    assert "my-project" in hints and "checkout" not in hints  # the basename only
    assert (clients.settings.data_dir / HINTS_FILE).stat().st_mode & 0o777 == 0o600


def test_commands_take_the_folder_or_the_session_id_as_given_to_the_editor(
    project: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["graph", "export", "--scope", "workspace", ".", "-o", "ws.jsonl"]) == 0
    assert main(["graph", "export", "--scope", "session", "chat-42", "-o", "s.jsonl"]) == 0
    ws_lines = (project / "ws.jsonl").read_text().splitlines()
    session_lines = (project / "s.jsonl").read_text().splitlines()
    assert len(ws_lines) > 2 and len(session_lines) > 2
    assert main(["graph", "export", "--scope", "workspace", str(tmp_path), "-o", "x.jsonl"]) == 0
    assert "0 nodes" in capsys.readouterr().err  # another folder: nothing of this one


def _turngraph(args: list[str]) -> subprocess.CompletedProcess[str]:
    """A real command in the test's environment (the fixture's variables, this folder)."""
    return subprocess.run(
        [sys.executable, "-m", "turngraph", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _ids(project: Path, settings_dir: Path) -> dict[str, str]:
    hasher = ScopeHasher.for_data_dir(settings_dir)
    return {
        "chat-42": hasher.session("chat-42"),
        ".": hasher.workspace(str(project)),
        "alice": hasher.user("alice"),
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["recap", "{chat-42}"],
        ["recap", "{chat-42}", "--json"],
        ["graph", "export", "--scope", "session", "{chat-42}"],
        ["graph", "export", "--scope", "workspace", "{.}"],
        ["graph", "export", "--scope", "user", "{alice}"],
        ["scopes", "--workspace", "{.}", "--json"],
    ],
    ids=lambda argv: " ".join(argv).replace("{", "").replace("}", ""),
)
def test_every_command_takes_the_raw_key_or_its_id_alike(
    project: Path, clients: Clients, argv: list[str]
) -> None:
    ids = _ids(project, clients.settings.data_dir)
    outputs = []
    for form in ("raw", "id"):
        args = [
            (ids[arg[1:-1]] if form == "id" else arg[1:-1]) if arg.startswith("{") else arg
            for arg in argv
        ]
        done = _turngraph(args)
        assert done.returncode == 0, done.stderr[-2000:]
        # an export's header line says when it was made: the rest must be the same
        outputs.append(
            done.stdout.removeprefix(done.stdout.split("\n", 1)[0])
            if args[0] == "graph"
            else done.stdout
        )
    assert outputs[0] == outputs[1] and outputs[0].strip()
    assert "mypy" in outputs[0] or ids["."] in outputs[0]


@pytest.mark.parametrize("form", ["raw", "id"])
def test_summarize_and_forget_take_the_raw_key_or_its_id(
    project: Path, clients: Clients, form: str
) -> None:
    ids = _ids(project, clients.settings.data_dir)
    session = "chat-42" if form == "raw" else ids["chat-42"]
    summarized = _turngraph(["summarize", session, "--last", "2", "--json"])
    assert summarized.returncode == 0, summarized.stderr[-2000:]
    assert json.loads(summarized.stdout)["session_id"] == ids["chat-42"]
    assert _turngraph(["graph", "export", "--scope", "session", session]).stdout.count("mypy")
    forgotten = _turngraph(["forget", "--scope", "session", session, "--yes"])
    assert forgotten.returncode == 0, forgotten.stderr[-2000:]
    left = _turngraph(["graph", "export", "--scope", "session", ids["chat-42"]])
    assert left.returncode == 0 and "mypy" not in left.stdout  # that session is gone
