"""Optional git metadata for a turn: branch, commit, dirty; no paths unless asked for."""

from __future__ import annotations

import subprocess
from pathlib import Path

from turngraph.schemas.turn_event import GitInfo

__all__ = ["GIT_TIMEOUT_S", "git_metadata"]

GIT_TIMEOUT_S = 0.5
"""Each git call may take this long; a slow or missing git gives no metadata, not a wait."""


def _git(cwd: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(  # fixed argv, no shell
            ["git", *args],
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=GIT_TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def git_metadata(workspace: Path, *, include_repository: bool = False) -> GitInfo | None:
    """Branch, commit and dirty flag of the repository at ``workspace``; None outside git.

    ``include_repository`` adds the repository folder's name (never its full path).
    """
    commit = _git(workspace, "rev-parse", "HEAD")
    if commit is None:
        return None
    branch = _git(workspace, "rev-parse", "--abbrev-ref", "HEAD")
    status = _git(workspace, "status", "--porcelain", "--untracked-files=no")
    repository = None
    if include_repository:
        top = _git(workspace, "rev-parse", "--show-toplevel")
        repository = Path(top).name if top else None
    return GitInfo(
        branch=branch if branch and branch != "HEAD" else None,
        commit=commit,
        dirty=None if status is None else bool(status),
        repository=repository,
    )
