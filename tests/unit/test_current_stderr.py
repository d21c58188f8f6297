"""Logs follow `sys.stderr` at each line, for every structlog set-up turngraph has.

A logger cached on first use kept the stream of that moment: a CI run read an empty
stderr because the line went to an earlier test's capture. Each case runs in its own
interpreter, since structlog's configuration and cached loggers are process-wide."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

SCRIPT = """
import io, json, sys
import structlog
{configure}
log = structlog.get_logger("probe")
first, second = io.StringIO(), io.StringIO()
sys.stderr = first
log.warning("first_line")
sys.stderr = second
log.warning("second_line")
import logging
logging.getLogger("library").warning("library_line")
sys.stderr = sys.__stderr__
print(json.dumps([first.getvalue(), second.getvalue()]))
"""

CONFIGURES = {
    "hook": "from turngraph.cli.hook_cmd import _configure_logging; _configure_logging()",
    "cli": (
        "from turngraph.logs import configure_logging\n"
        "from turngraph.settings import Settings\n"
        "configure_logging(Settings(log_format='json'))"
    ),
}


@pytest.mark.parametrize("name", sorted(CONFIGURES))
def test_a_cached_logger_writes_to_the_stderr_of_each_line(name: str) -> None:
    script = SCRIPT.format(configure=CONFIGURES[name])
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    first, second = json.loads(done.stdout)
    assert "first_line" in first and "second_line" not in first
    assert "second_line" in second
    if name == "cli":  # the standard library's records take the same path
        assert "library_line" in second and "library_line" not in first
