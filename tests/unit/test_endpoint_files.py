"""Where the CLI's fast path finds the endpoint: the data folder as the settings find it,
``endpoint.json`` trusted only while its process lives, the token private and kept."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from turngraph.endpoint.files import (
    ENDPOINT_FILE,
    TOKEN_FILE,
    data_dir,
    ensure_token,
    read_live,
    remembered_port,
    remove_endpoint,
    write_endpoint,
)
from turngraph.settings import Settings


def test_the_data_folder_is_the_settings_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TURNGRAPH_DATA_DIR", raising=False)
    assert data_dir() == Settings().data_dir  # the platform's folder
    (tmp_path / ".env").write_text('# local\nexport TURNGRAPH_DATA_DIR="from-dotenv"\n')
    assert data_dir() == Settings().data_dir == tmp_path / "from-dotenv"
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", str(tmp_path / "from-env"))
    assert data_dir() == Settings().data_dir == tmp_path / "from-env"


def test_the_token_is_made_once_private_and_kept(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    token = ensure_token(folder)
    assert len(token) >= 40 and ensure_token(folder) == token
    assert stat.S_IMODE((folder / TOKEN_FILE).stat().st_mode) == 0o600
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_an_endpoint_is_trusted_only_while_its_process_lives(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    token = ensure_token(folder)
    write_endpoint(folder, "http://127.0.0.1:4321", os.getpid(), 4321)
    live = read_live(folder)
    assert live is not None and (live.url, live.token) == ("http://127.0.0.1:4321", token)
    assert stat.S_IMODE((folder / ENDPOINT_FILE).stat().st_mode) == 0o600
    assert remembered_port(folder) == 4321

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    write_endpoint(folder, "http://127.0.0.1:4321", int(gone.stdout), 4321)
    assert read_live(folder) is None  # its process has exited

    write_endpoint(folder, "http://127.0.0.1:4321", os.getpid(), 4321)
    remove_endpoint(folder, os.getpid() + 1)  # another endpoint's stop leaves it
    assert read_live(folder) is not None
    remove_endpoint(folder, os.getpid())
    assert read_live(folder) is None and remembered_port(folder) == 4321

    (folder / ENDPOINT_FILE).write_text(json.dumps({"url": 5, "pid": "x"}))
    assert read_live(folder) is None
