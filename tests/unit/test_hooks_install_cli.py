"""``turngraph hooks install`` as a user runs it: it says when the folder has no consent
(every hook would do nothing), ``--consent`` grants it, ``--via`` picks how the editor
reaches turngraph, and the endpoint's token never goes into a project's file."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from turngraph.clients import producer_consent_endpoint
from turngraph.producers.consent import ConsentStore
from turngraph.producers.hooks.config import FORWARDER
from turngraph.producers.hooks.editors import entry_commands, entry_urls
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings


def _install(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(tmp_path / "home"),
           "TURNGRAPH_DATA_DIR": str(tmp_path / "data")}  # fmt: skip
    return subprocess.run(
        [sys.executable, "-m", "turngraph", "hooks", "install", *args],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def _consented(tmp_path: Path, folder: Path) -> bool:
    settings = Settings(_env_file=None, data_dir=tmp_path / "data")
    workspace = ScopeHasher.for_data_dir(settings.data_dir).workspace(str(folder.resolve()))
    return ConsentStore(settings.data_dir).is_enabled(
        workspace, producer_consent_endpoint(settings)
    )


def test_install_says_when_consent_is_missing_and_consent_grants_it(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = _install(tmp_path, "gemini", "--folder", str(project))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["consent"] is False
    assert f"turngraph consent enable --workspace {project.resolve()}" in done.stderr
    assert "--consent" in done.stderr
    assert not _consented(tmp_path, project)

    again = _install(tmp_path, "gemini", "--folder", str(project), "--consent")
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["consent"] is True
    assert "publishing is not enabled" not in again.stderr
    assert _consented(tmp_path, project)


def test_the_forwarder_is_written_into_the_data_folder_and_named(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    done = _install(tmp_path, "codex", "--folder", str(project), "--via", "forwarder")
    assert done.returncode == 0, done.stderr
    assert "the endpoint is not running" in done.stderr
    forwarder = tmp_path / "data" / "hooks" / FORWARDER
    config = json.loads((project / ".codex" / "hooks.json").read_text())
    commands = [c for e in config["hooks"]["UserPromptSubmit"] for c in entry_commands(e)]
    assert commands == [f"{sys.executable} -I -S {forwarder} hook prompt --editor codex"]
    assert forwarder.is_file()


def test_http_hooks_go_to_the_user_file_only_and_need_the_endpoint(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    refused = _install(tmp_path, "claude-code", "--folder", str(project), "--via", "http")
    assert refused.returncode == 2 and "--user" in refused.stderr
    assert not (project / ".claude").exists()

    missing = _install(tmp_path, "claude-code", "--user", "--via", "http")
    assert missing.returncode == 1 and "turngraph up" in missing.stderr
    assert not (tmp_path / "home" / ".claude").exists()

    data = tmp_path / "data"
    data.mkdir(exist_ok=True)
    (data / "endpoint.json").write_text('{"schema_version": 1, "url": "http://127.0.0.1:7431"}')
    (data / "endpoint.token").write_text("tok\n")
    done = _install(tmp_path, "claude-code", "--user", "--via", "http")
    assert done.returncode == 0, done.stderr
    config = json.loads((tmp_path / "home" / ".claude" / "settings.json").read_text())
    assert [u for e in config["hooks"]["Stop"] for u in entry_urls(e)] == [
        "http://127.0.0.1:7431/v1/hooks/claude-code/capture"
    ]
    start = [c for e in config["hooks"]["SessionStart"] for c in entry_commands(e)]
    assert start == [f"{sys.executable} -I -S {data / 'hooks' / FORWARDER} hook session-start "
                     "--editor claude-code"]  # fmt: skip
