"""Sampling profiles of running processes: ``py-spy record`` attached by pid, and a
summary of its collapsed stacks (each function's inclusive and own share of the samples).

``py-spy`` is a development tool, not a dependency: :func:`record` says how to install it
when it is missing. The summary is what docs/operations.md quotes; the collapsed stacks
(one ``frame;frame;... count`` line per distinct stack) open in speedscope or
``flamegraph.pl`` as they are.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

__all__ = ["record", "shortened", "summarise"]

_FRAME = re.compile(r"^(?P<function>.*?) \((?P<file>[^:()]+)(?::\d+)?\)$")


def record(pid: int, seconds: float, out: Path, rate: int = 100) -> subprocess.Popen[bytes]:
    """Start ``py-spy record`` on ``pid`` for ``seconds`` (non-blocking sampling, so the
    process is never paused), writing collapsed stacks to ``out``; the caller waits."""
    spy = shutil.which("py-spy", path=f"{Path(sys.executable).parent}{os.pathsep}{os.defpath}")
    spy = spy or shutil.which("py-spy")
    if spy is None:
        raise SystemExit("--profile needs py-spy: pip install py-spy")
    command = [
        spy, "record", "--nonblocking", "--format", "raw", "--rate", str(rate),
        "--duration", str(max(1, round(seconds))), "--output", str(out), "--pid", str(pid),
    ]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def _frame(text: str) -> str:
    """``function (file:line)`` as ``function (file)``, the path cut to its package."""
    match = _FRAME.match(text.strip())
    if match is None:
        return text.strip()
    path = match["file"]
    if "/site-packages/" in path:
        path = path.split("/site-packages/", 1)[1]
    elif path.startswith(str(Path.cwd()) + "/"):
        path = path[len(str(Path.cwd())) + 1 :]
    return f"{match['function']} ({path})"


def shortened(collapsed: str) -> str:
    """Collapsed stacks with each frame as :func:`summarise` names it (no line numbers, no
    interpreter paths), equal stacks summed: the same profile in a fraction of the bytes."""
    counts: Counter[str] = Counter()
    for line in collapsed.splitlines():
        stack, _, count = line.rpartition(" ")
        if stack and count.isdigit():
            counts[";".join(_frame(f) for f in stack.split(";"))] += int(count)
    return "".join(f"{stack} {n}\n" for stack, n in counts.most_common())


def summarise(collapsed: Path, top: int = 45) -> str:
    """Each function's inclusive share (itself and what it calls) and own share (the
    sample's innermost frame) of the samples in ``collapsed``, largest first."""
    inclusive: Counter[str] = Counter()
    own: Counter[str] = Counter()
    total = 0
    for line in collapsed.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        samples = int(count)
        frames = [_frame(f) for f in stack.split(";")]
        total += samples
        for name in set(frames):
            inclusive[name] += samples
        own[frames[-1]] += samples
    if not total:
        return "no samples\n"
    lines = [f"samples: {total}", "", f"## inclusive (the function and what it calls), top {top}"]
    lines += [f"{100 * n / total:6.1f} %  {name}" for name, n in inclusive.most_common(top)]
    lines += ["", f"## own (the innermost frame), top {top}"]
    lines += [f"{100 * n / total:6.1f} %  {name}" for name, n in own.most_common(top)]
    return "\n".join(lines) + "\n"
