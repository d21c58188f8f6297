"""The real ``turngraph bridge`` subprocess under several locales: invalid UTF-8 on stdin is
one typed error reply, never a crash, and the replies to earlier lines all arrive."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

LINES = (
    b'{"id": 1, "op": "status"}\n'
    b'{"id": 2, "op": "recall", "query": "caf\xc3\xa9 \xe2\x98\x95"}\n'
    b"\xff\xfe not utf-8 \xc3\x28\n"
    b'{"id": 3, "op": "status", "note": "\xed\xa0\x80 (an encoded surrogate)"}\n'  # id read
    b'{"id": 4, "op": "status"}\n'
)


@pytest.mark.parametrize(
    "environment",
    [
        {"LANG": "C"},
        {"LANG": "C.UTF-8"},
        {"LANG": "en_US.UTF-8"},
        {"LC_ALL": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"},
        # What a desktop locale gives Python where en_US.UTF-8 is installed: strict UTF-8.
        {"LANG": "en_US.UTF-8", "PYTHONIOENCODING": "utf-8:strict"},
    ],
    ids=["C", "C.UTF-8", "en_US.UTF-8", "C-no-coercion", "strict-utf8"],
)
def test_bridge_answers_every_line_whatever_the_locale(
    tmp_path: Path, environment: dict[str, str]
) -> None:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("LC_", "LANG", "PYTHONIOENCODING", "PYTHONUTF8", "TURNGRAPH_"))
    }
    env.update(environment, TURNGRAPH_DATA_DIR=str(tmp_path / "data"), TURNGRAPH_LOG_LEVEL="ERROR")
    done = subprocess.run(
        [sys.executable, "-m", "turngraph.cli", "bridge"],
        input=LINES,
        capture_output=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    assert b"Traceback" not in done.stderr
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert [reply.get("id") for reply in replies] == [1, 2, None, 3, 4]
    assert replies[0]["success"] is True and replies[4]["success"] is True
    assert replies[1]["error_code"] == "BACKEND_UNAVAILABLE"  # no services: fails open
    assert replies[2]["error_code"] == "INVALID_ENCODING"
    assert replies[3]["error_code"] == "INVALID_ENCODING"  # UTF-8 forbids encoded surrogates
