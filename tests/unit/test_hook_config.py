"""``turngraph hooks install|uninstall|status``: our entries merged into each editor's own
file and removed again, byte for byte."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from turngraph.producers.hooks.config import (
    BACKUP_SUFFIX,
    config_file,
    install,
    is_our_url,
    is_ours,
    status,
    uninstall,
)
from turngraph.producers.hooks.editors import (
    EDITORS,
    HttpTarget,
    entry_commands,
    entry_urls,
    in_background,
)
from turngraph.schemas.errors import ConfigurationError

EXE = "/opt/turngraph/bin/turngraph"

# What people already have in these files, formatted their own way (tabs, key order, a
# trailing newline missing): the round trip must give these bytes back.
EXISTING = {
    "claude-code": (
        '{\n\t"permissions": {"allow": ["Bash(make test)"]},\n\t"hooks": {"Stop": [{"hooks": '
        '[{"type": "command", "command": "notify-send done"}]}]}\n}'
    ),
    "vscode": (
        '{"hooks": {"PostToolUse": [{"type": "command", "command": "npx prettier --write ."}]}}\n'
    ),
    "copilot-cli": (
        '{"version": 1, "hooks": {"preToolUse": [{"type": "command", "bash": "./check.sh"}]}}'
    ),
    "cursor": (
        '{\n  "version": 1,\n  "hooks": {"afterFileEdit": [{"command": "./format.sh"}], '
        '"sessionStart": [{"command": "./env.sh"}]}\n}\n'
    ),
    "gemini": (
        '{"theme": "GitHub", "hooks": {"BeforeTool": [{"matcher": "run_shell_command", "hooks": '
        '[{"type": "command", "command": "./guard.sh", "timeout": 5000}]}]}}'
    ),
    "codex": (
        '{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", '
        '"command": "python3 .codex/hooks/check.py", "statusMessage": "Checking"}]}]}}\n'
    ),
}


@pytest.mark.parametrize("editor", sorted(EDITORS))
def test_install_merges_and_uninstall_restores_the_bytes(editor: str, tmp_path: Path) -> None:
    spec = EDITORS[editor]
    path = config_file(spec, project=tmp_path, home=tmp_path / "home")
    path.parent.mkdir(parents=True)
    path.write_text(EXISTING[editor])
    before = path.read_bytes()

    report = install(spec, path, EXE)
    data = json.loads(path.read_text())
    assert report.backup is not None and report.backup.read_bytes() == before
    for binding in spec.bindings:
        commands = [c for e in data["hooks"][binding.event] for c in entry_commands(e)]
        ours = f"{EXE} hook {binding.action.value} --editor {editor}"
        assert (in_background(ours) if binding.background else ours) in commands
    original = json.loads(before)
    for event, entries in original["hooks"].items():  # theirs are all still there
        assert all(entry in data["hooks"][event] for entry in entries)
    assert {k: v for k, v in data.items() if k != "hooks"} == {
        k: v for k, v in original.items() if k != "hooks"
    }
    install(spec, path, EXE)  # twice: still one entry per event
    again = json.loads(path.read_text())
    for binding in spec.bindings:
        ours = [c for e in again["hooks"][binding.event] for c in entry_commands(e) if is_ours(c)]
        assert len(set(ours)) == 1

    assert uninstall(spec, path).action == "restored"
    assert path.read_bytes() == before
    assert not path.with_name(path.name + BACKUP_SUFFIX).exists()
    assert uninstall(spec, path).action == "not installed"


@pytest.mark.parametrize("editor", sorted(EDITORS))
def test_a_file_install_created_goes_away_with_its_folders(editor: str, tmp_path: Path) -> None:
    spec = EDITORS[editor]
    path = config_file(spec, project=None, home=tmp_path)
    install(spec, path, EXE)
    assert path.exists()
    assert [f.editor for f in status(project=tmp_path / "elsewhere", home=tmp_path)] == [editor]
    assert uninstall(spec, path).action == "removed"
    assert list(tmp_path.iterdir()) == []


def test_edits_made_after_install_are_kept(tmp_path: Path) -> None:
    spec = EDITORS["claude-code"]
    path = config_file(spec, project=tmp_path, home=tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text('{"model": "opus"}')
    install(spec, path, EXE)
    data = json.loads(path.read_text())
    data["env"] = {"FOO": "1"}
    path.write_text(json.dumps(data))
    assert uninstall(spec, path).action == "removed our entries"
    assert json.loads(path.read_text()) == {"model": "opus", "env": {"FOO": "1"}}


@pytest.mark.parametrize("broken", ["{not json", "[" * 200_000 + "]" * 200_000])
def test_a_broken_file_is_refused_untouched(tmp_path: Path, broken: str) -> None:
    spec = EDITORS["gemini"]
    path = config_file(spec, project=tmp_path, home=tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(broken)
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        install(spec, path, EXE)
    assert path.read_text() == broken


def test_status_names_what_is_installed_where(tmp_path: Path) -> None:
    project, home = tmp_path / "proj", tmp_path / "home"
    install(EDITORS["vscode"], config_file(EDITORS["vscode"], project=project, home=home), EXE)
    install(EDITORS["gemini"], config_file(EDITORS["gemini"], project=None, home=home), EXE)
    found = {(f.editor, f.scope) for f in status(project=project, home=home)}
    assert found == {("vscode", "project"), ("gemini", "user")}
    assert not is_ours("notify-send done") and not is_ours("turngraph mcp")


HTTP = HttpTarget("http://127.0.0.1:7431", "secret-token")


def test_claude_code_gets_http_hooks_where_it_runs_them_quietly(tmp_path: Path) -> None:
    spec = EDITORS["claude-code"]
    path = config_file(spec, project=None, home=tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(EXISTING["claude-code"])
    before = path.read_bytes()
    install(spec, path, EXE, HTTP)
    hooks = json.loads(path.read_text())["hooks"]
    urls = {event: [u for e in entries for u in entry_urls(e)] for event, entries in hooks.items()}
    assert urls["UserPromptSubmit"] == ["http://127.0.0.1:7431/v1/hooks/claude-code/prompt"]
    assert urls["Stop"] == ["http://127.0.0.1:7431/v1/hooks/claude-code/capture"]
    assert urls["PreCompact"] == ["http://127.0.0.1:7431/v1/hooks/claude-code/summarize"]
    ours = [h for e in hooks["UserPromptSubmit"] for h in e["hooks"] if h.get("type") == "http"]
    assert ours[0]["headers"] == {"Authorization": "Bearer secret-token"}
    # SessionStart runs command hooks only; a failed SessionEnd http hook prints an error.
    # SessionEnd runs in the background: Claude Code waits for it but reads no answer.
    for event, command in (
        ("SessionStart", f"{EXE} hook session-start --editor claude-code"),
        ("SessionEnd", in_background(f"{EXE} hook session-end --editor claude-code")),
    ):
        assert urls[event] == []
        assert command in [c for e in hooks[event] for c in entry_commands(e)]
    assert path.stat().st_mode & 0o077 == 0  # the token is in it
    assert [(f.editor, f.scope, len(f.events)) for f in status(project=tmp_path / "p",
            home=tmp_path)] == [("claude-code", "user", 5)]  # fmt: skip
    install(spec, path, EXE, HTTP)  # twice: one entry per event
    again = json.loads(path.read_text())["hooks"]
    assert [u for e in again["Stop"] for u in entry_urls(e)] == urls["Stop"]
    assert uninstall(spec, path).action == "restored"
    assert path.read_bytes() == before


def test_our_urls_are_told_from_others() -> None:
    assert is_our_url("http://127.0.0.1:7431/v1/hooks/claude-code/prompt")
    assert not is_our_url("http://localhost:8080/hooks/tool-executed")
    assert not is_our_url("http://127.0.0.1:7431/v1/hooks/claude-code/prompt/extra")


def test_two_editors_sharing_a_folder_leave_nothing_behind(tmp_path: Path) -> None:
    vscode, copilot = EDITORS["vscode"], EDITORS["copilot-cli"]
    for first, second in ((vscode, copilot), (copilot, vscode)):
        project = tmp_path / f"{first.name}-first"
        project.mkdir()
        for spec in (first, second):
            install(spec, config_file(spec, project=project, home=tmp_path), EXE)
        assert (project / ".github" / "hooks").is_dir()
        for spec in (first, second):
            assert uninstall(spec, config_file(spec, project=project, home=tmp_path)).action == (
                "removed"
            )
        assert list(project.iterdir()) == []
