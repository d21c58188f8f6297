"""Errors a user can cause from the command line end in one line that names the fix
(issue 35): the graph view without its optional extra, a reader that closes the pipe, a
read-only file system under the data folder, a producer URL that cannot work."""

from __future__ import annotations

import errno
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.processes import cli_env
from turngraph.cli import main
from turngraph.cli.failures import describe_os_error


def test_graph_show_without_the_viz_extra_names_the_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # It printed `internal error: RuntimeError ... report it` (the cause only with
    # TURNGRAPH_TRACEBACK=1). None in sys.modules is how Python says "not installed".
    monkeypatch.setitem(sys.modules, "neo4j_viz", None)
    assert main(["graph", "show", "--scope", "workspace", "."]) == 1
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert "internal error" not in err
    assert "neo4j-viz" in err and "pip install -e '.[viz]'" in err, err


@pytest.mark.parametrize("args", [["hooks", "status"], ["bridge", "--help"]], ids=" ".join)
def test_a_reader_that_stops_reading_ends_the_command_quietly(
    tmp_path: Path, args: list[str]
) -> None:
    # `turngraph queue status | head` ended in `error: BrokenPipeError`.
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader has gone before the command writes
    try:
        done = subprocess.run(
            [sys.executable, "-m", "turngraph", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            env=cli_env(tmp_path / "data"),
            cwd=tmp_path,
            text=True,
            timeout=120,
            check=False,
        )
    finally:
        os.close(write_end)
    assert done.stderr == "", done.stderr
    assert done.returncode in (0, 141)  # 141: 128 + SIGPIPE, as `yes | head` ends


def test_a_read_only_file_system_names_the_data_folder_setting() -> None:
    said = describe_os_error(OSError(errno.EROFS, "Read-only file system", "/mnt/ro/data"))
    assert said.startswith("/mnt/ro/data: Read-only file system")
    assert "TURNGRAPH_DATA_DIR" in said


def test_a_path_in_the_data_folder_names_its_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TURNGRAPH_DATA_DIR", "/srv/tg")
    said = describe_os_error(NotADirectoryError(errno.ENOTDIR, "Not a directory", "/srv/tg/x"))
    assert "TURNGRAPH_DATA_DIR" in said
    elsewhere = describe_os_error(FileNotFoundError(errno.ENOENT, "No such file", "/etc/x"))
    assert "TURNGRAPH_DATA_DIR" not in elsewhere and "check the path" in elsewhere


def test_a_producer_url_that_cannot_work_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["credentials", "issue", "acme", "--producer-url", "redis://h:notaport/0"])
    assert usage.value.code == 2
    err = capsys.readouterr().err
    assert "turngraph credentials issue: error: argument --producer-url" in err
    assert "port must be a number" in err and "notaport" not in err
