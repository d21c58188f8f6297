"""Scope hashing with the installation salt, the consent store, git metadata."""

from __future__ import annotations

import re
import stat
import subprocess
from pathlib import Path

import pytest

from turngraph.producers.consent import ConsentStore, endpoint_id
from turngraph.producers.git_info import git_metadata
from turngraph.producers.scopes import SALT_FILE, ScopeHasher, load_or_create_salt

ID = re.compile(r"^[A-Za-z0-9_-]{1,128}$")


def test_salt_is_created_once_with_mode_600(tmp_path: Path) -> None:
    first = load_or_create_salt(tmp_path)
    assert load_or_create_salt(tmp_path) == first and len(first) == 32
    assert stat.S_IMODE((tmp_path / SALT_FILE).stat().st_mode) == 0o600


def test_scope_ids_are_stable_valid_and_salted(tmp_path: Path) -> None:
    hasher = ScopeHasher.for_data_dir(tmp_path / "a")
    other = ScopeHasher.for_data_dir(tmp_path / "b")
    workspace = "/home/alice/projects/secret-client"
    wid = hasher.workspace(workspace)
    assert ID.match(wid) and wid.startswith("w_") and "alice" not in wid
    assert hasher.workspace(workspace) == wid
    assert other.workspace(workspace) != wid  # another installation, another id
    assert hasher.user("alice") != hasher.session("alice")  # kinds never collide
    assert ID.match(hasher.user("ünïcode ✓ " * 50))


def test_consent_is_per_workspace_and_endpoint(tmp_path: Path) -> None:
    store = ConsentStore(tmp_path)
    endpoint = endpoint_id("redis://:pw@127.0.0.1:6380/0")
    assert endpoint == "redis://127.0.0.1:6380/0"  # no credentials in the grant
    assert not store.is_enabled("w_1", endpoint)
    store.enable("w_1", endpoint)
    assert store.is_enabled("w_1", endpoint)
    assert not store.is_enabled("w_1", "redis://elsewhere:6379/0")
    assert not store.is_enabled("w_2", endpoint)
    check = ConsentStore(tmp_path).checker(endpoint)  # another process
    assert check("w_1") and not check("w_2")
    store.disable("w_1", endpoint)
    assert not check("w_1")
    assert stat.S_IMODE(store.path.stat().st_mode) == 0o600


def test_unreadable_consent_file_means_no_consent(tmp_path: Path) -> None:
    (tmp_path / "consent.json").write_text("{not json")
    assert not ConsentStore(tmp_path).is_enabled("w_1", "redis://h:1/0")


def test_git_metadata_without_paths(tmp_path: Path) -> None:
    assert git_metadata(tmp_path) is None
    repo = tmp_path / "myrepo"
    repo.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q", "-b", "feature/x")
    (repo / "f.txt").write_text("1")
    git("add", "f.txt")
    git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-q", "-m", "init")
    info = git_metadata(repo)
    assert info is not None and info.branch == "feature/x" and info.dirty is False
    assert info.commit and len(info.commit) == 40 and info.repository is None
    (repo / "f.txt").write_text("2")
    info = git_metadata(repo, include_repository=True)
    assert info is not None and info.dirty is True and info.repository == "myrepo"


@pytest.mark.parametrize("url", ["redis://localhost", "rediss://u:p@h:7000/3"])
def test_endpoint_ids_have_no_credentials(url: str) -> None:
    assert "p@" not in endpoint_id(url) and endpoint_id(url).count(":") == 2


def test_the_scope_literals_and_the_scope_enums_name_the_same_scopes() -> None:
    from typing import get_args

    from turngraph.schemas.scopes import (
        PromotionScope,
        Scope,
        ScopeName,
        ScopeNameValue,
        ScopeValue,
    )

    assert get_args(ScopeValue) == tuple(scope.value for scope in Scope)
    assert get_args(ScopeNameValue) == tuple(name.value for name in ScopeName)
    assert [name.value for name in ScopeName] == [*get_args(ScopeValue), "auto"]
    assert set(get_args(PromotionScope)) < set(get_args(ScopeValue))


def test_a_tenants_scopes_show_when_each_session_was_first_published(tmp_path: Path) -> None:
    # Issue 35: `scopes` listed a tenant's sessions as bare hashes; the hints know when
    # this machine first published each.
    from turngraph.cli.scopes_cmd import local_scopes, render
    from turngraph.producers.scope_hints import ScopeHints
    from turngraph.settings import Settings

    hints = ScopeHints(tmp_path)
    hints.note(workspace_id="w_1", raw_workspace="/home/ada/shop", session_id="s_1")
    rows = local_scopes(Settings(_env_file=None, data_dir=tmp_path, tenant="acme"))
    assert [row.folder for row in rows] == ["shop"]
    session = rows[0].sessions[0]
    assert session.id == "s_1" and session.first_turn is not None
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", session.first_turn)
    assert session.first_turn in render(rows).splitlines()[2]
    # and no turn count it cannot know: it said 0 turns for every scope
    assert rows[0].turns is None and session.turns is None
    table = render(rows).splitlines()
    assert table[1].endswith("  -") and table[2].endswith("  -"), table
