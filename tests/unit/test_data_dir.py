"""One data folder per user, found from any folder; private; and never the real one in
tests (``tests/conftest.py`` points both the variable and the platform's folder into a
sandbox before anything reads a setting)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import platformdirs
import pytest

from turngraph.producers.consent import ConsentStore
from turngraph.producers.private_files import ensure_private_dir, write_private_text
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings, default_data_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_default_is_the_platform_user_data_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TURNGRAPH_DATA_DIR")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(tmp_path)
    expected = Path(platformdirs.user_data_dir("turngraph", appauthor=False))
    assert expected == tmp_path / "xdg" / "turngraph"
    assert default_data_dir() == expected
    assert Settings(_env_file=None).data_dir == expected
    elsewhere = tmp_path / "some" / "project"
    elsewhere.mkdir(parents=True)
    monkeypatch.chdir(elsewhere)
    assert Settings(_env_file=None).data_dir == expected  # the same from anywhere


def test_the_variable_wins_and_a_relative_one_is_made_absolute(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", str(tmp_path / "mine"))
    assert Settings(_env_file=None).data_dir == tmp_path / "mine"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", "relative/data")
    settings = Settings(_env_file=None)
    monkeypatch.chdir("/")
    assert settings.data_dir == tmp_path / "relative" / "data"


def test_tests_never_resolve_the_real_user_folder() -> None:
    sandbox = Path(os.environ["XDG_DATA_HOME"]).parent
    assert Path(os.environ["TURNGRAPH_DATA_DIR"]).is_relative_to(sandbox)
    assert Settings(_env_file=None).data_dir.is_relative_to(sandbox)
    assert default_data_dir().is_relative_to(sandbox)
    real = Path.home() / ".local" / "share" / "turngraph"
    assert not sandbox.is_relative_to(real) and default_data_dir() != real


def test_folders_are_700_and_files_600_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o000)
    try:
        loose = tmp_path / "loose"
        loose.mkdir(mode=0o755)
        loose.chmod(0o755)
        assert ensure_private_dir(loose) == loose and _mode(loose) == 0o700
        nested = ensure_private_dir(tmp_path / "a" / "b")
        assert _mode(nested) == 0o700
        secret = nested / "secret.txt"
        write_private_text(secret, "one")
        write_private_text(secret, "two")  # replaced atomically, still private
        assert secret.read_text() == "two" and _mode(secret) == 0o600
        assert [p.name for p in nested.iterdir()] == ["secret.txt"]  # no temporary left
        ScopeHasher.for_data_dir(tmp_path / "fresh")
        assert _mode(tmp_path / "fresh") == 0o700
        assert _mode(tmp_path / "fresh" / "scope.salt") == 0o600
        consent = ConsentStore(tmp_path / "granted")  # written through write_private_text
        consent.enable("w_1", "redis://localhost")
        consent.disable("w_1", "redis://localhost")
        assert not consent.is_enabled("w_1", "redis://localhost")
        assert [p.name for p in (tmp_path / "granted").iterdir()] == ["consent.json"]
        assert _mode(tmp_path / "granted" / "consent.json") == 0o600
    finally:
        os.umask(old)
