"""A hook the editor waits for but reads no answer from ends at once; its command runs on
with the payload (``editors.in_background``, Claude Code's ``SessionEnd``)."""

from __future__ import annotations

import errno
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.worker_processes import wait_for
from turngraph.producers.hooks.editors import EDITORS, in_background

PAYLOAD = b'{"hook_event_name": "SessionEnd", "session_id": "s1", "reason": "other"}'


def _open_for_writing(gate: Path) -> int | None:
    """The gate's write end once the command has it open for reading (else None)."""
    try:
        return os.open(gate, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as error:
        if error.errno == errno.ENXIO:  # no reader yet
            return None
        raise


@pytest.mark.skipif(os.name == "nt", reason="POSIX shells")
@pytest.mark.parametrize("shell", ["sh", "bash"])
def test_the_hook_ends_while_its_command_still_runs_with_the_payload(
    shell: str, tmp_path: Path
) -> None:
    if shutil.which(shell) is None:
        pytest.skip(f"no {shell} here")
    gate, received = tmp_path / "gate", tmp_path / "received"
    os.mkfifo(gate)
    script = (
        "import sys; data = sys.stdin.buffer.read(); "
        f"open({str(gate)!r}).read(); open({str(received)!r}, 'wb').write(data)"
    )
    command = in_background(f"{shlex.quote(sys.executable)} -c {shlex.quote(script)}")
    # Captured output: a command that kept the hook's stdout would hold this call open.
    done = subprocess.run([shell, "-c", command], input=PAYLOAD, capture_output=True, timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert not received.exists()  # the hook ended before its command went on
    writer: list[int] = []
    assert wait_for(lambda: bool(writer.append(fd) or True) if (fd := _open_for_writing(gate))
                    is not None else False, 60), "the command is not running"  # fmt: skip
    os.write(writer[0], b"go")
    os.close(writer[0])
    assert wait_for(lambda: received.exists() and received.read_bytes() == PAYLOAD, 60)


def test_only_claude_codes_session_end_runs_in_the_background() -> None:
    background = [(name, b.event) for name, spec in EDITORS.items() for b in spec.bindings
                  if b.background]  # fmt: skip
    assert background == [("claude-code", "SessionEnd")]
