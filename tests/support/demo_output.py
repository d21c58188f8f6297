"""What ``turngraph up --exit-after-demo`` prints, read by the first-run tests."""

from __future__ import annotations

from turngraph.demo import DEMO_QUESTION

__all__ = ["demo_recalled"]


def demo_recalled(output: str) -> bool:
    """The demo's answer names the decision the demo conversation recorded."""
    lines = output.splitlines()
    if f"Q: {DEMO_QUESTION}" not in lines:
        return False
    answer = lines[lines.index(f"Q: {DEMO_QUESTION}") + 1 :]
    return any(line.startswith("  1. [") and "noeviction" in line for line in answer[:5])
