"""The real Claude Code, hooks on against hooks off, interleaved in one run (``bench.hooks``).

``claude -p`` from ``tests/clients`` (``npm ci --prefix tests/clients``) runs headless
against the scripted model server of the tests; one home has turngraph's hooks installed
as ``turngraph hooks install claude-code --user`` writes them (http where Claude Code takes
them, the forwarder elsewhere), the other none. Runs alternate (off, on, off, on...), so
the machine's load falls on both alike; the median of the pairwise differences is what
the hooks add to one ``claude -p``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests.support.model_server import model_server

__all__ = ["CLAUDE", "claude_extra_ms", "install_user_hooks"]

CLAUDE = Path(__file__).parents[1] / "tests" / "clients" / "node_modules" / ".bin" / "claude"


def install_user_hooks(home: Path, env: dict[str, str]) -> None:
    """``turngraph hooks install claude-code --user --via http`` into ``home``."""
    subprocess.run(
        [sys.executable, "-m", "turngraph", "hooks", "install", "claude-code", "--user",
         "--via", "http"],
        env={**env, "HOME": str(home)}, capture_output=True, check=True, timeout=120,
    )  # fmt: skip


def _claude_env(env: dict[str, str], home: Path, model_url: str) -> dict[str, str]:
    drop = ("ANTHROPIC_", "CLAUDE")
    kept = {k: v for k, v in env.items() if not k.startswith(drop)}
    return {**kept, "HOME": str(home), "ANTHROPIC_BASE_URL": model_url,
            "ANTHROPIC_API_KEY": "sk-scripted", "DISABLE_AUTOUPDATER": "1",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}  # fmt: skip


def _one(env: dict[str, str], project: Path, prompt: str) -> float:
    started = time.perf_counter()
    done = subprocess.run(
        [str(CLAUDE), "-p", prompt], cwd=project, env=env, capture_output=True, timeout=300,
        stdin=subprocess.DEVNULL,
    )  # fmt: skip
    elapsed = (time.perf_counter() - started) * 1000
    if done.returncode != 0 or done.stderr.strip():
        raise RuntimeError(f"claude -p failed or showed an error: {done.stderr[-500:]!r}")
    return elapsed


def claude_extra_ms(
    runs: int, env: dict[str, str], project: Path, hooks_home: Path, bare_home: Path
) -> tuple[float, float, float]:
    """Median wall of ``claude -p`` without hooks, with them, and the median pairwise extra."""
    off, on = [], []
    with model_server("Noted.") as model:
        with_hooks = _claude_env(env, hooks_home, model.url)
        without = _claude_env(env, bare_home, model.url)
        _one(without, project, "warm up")  # the first run of a binary pays the disk
        for i in range(runs):
            off.append(_one(without, project, f"question {i}?"))
            on.append(_one(with_hooks, project, f"question {i}?"))
    extra = statistics.median(b - a for a, b in zip(off, on, strict=True))
    return statistics.median(off), statistics.median(on), extra


def available() -> bool:
    """The npm package is installed and runs here."""
    return CLAUDE.exists() and os.access(CLAUDE, os.X_OK)
