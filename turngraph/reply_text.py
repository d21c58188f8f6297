"""What ``turngraph recall``, ``publish`` and ``status`` print: one renderer whichever
path answered (the endpoint or the full code path), and the reachability line the MCP
``status`` tool starts with. Standard library only.

By default a short listing a person reads; with ``--json`` the reply object itself (the
bridge's contract), for scripts. Exit status 0 on success, 1 on failure.
"""

from __future__ import annotations

import json
import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the fast path)
if TYPE_CHECKING:
    from typing import Any, TextIO

__all__ = ["print_reply", "reachability_line", "recall_text", "status_text"]

TEXT_WORDS = 14
"""How many words of each result's text the listing shows."""


def reachability_line(status: dict[str, Any]) -> str:
    """What a person reads first from a status reply."""
    if not status.get("redis_available"):
        return "memory not reachable (Redis did not answer): turns are not stored"
    replicas = status.get("recall_replicas")
    if replicas == 0:
        return "memory reachable, but no recall worker is running: searches will not answer"
    if replicas is None:
        return "memory reachable"
    return f"memory reachable; {replicas} recall worker{'s' * (replicas != 1)} answering"


def _first_words(text: str, words: int = TEXT_WORDS) -> str:
    parts = text.split()
    return " ".join(parts[:words]) + (" ..." if len(parts) > words else "")


def recall_text(reply: dict[str, Any]) -> str:
    """A recall reply as a listing: rank, kind, score, the first words of each result."""
    results = reply.get("results") or []
    if not results:
        return "no memories matched"
    lines = []
    for rank, result in enumerate(results, 1):
        kind = result.get("kind") or result.get("source") or "memory"
        score = (result.get("score") or {}).get("final_score")
        shown = f"{score:.2f}" if isinstance(score, int | float) else "   -"
        lines.append(f"{rank:>2}. {kind:<12} {shown}  {_first_words(str(result.get('text', '')))}")
    return "\n".join(lines)


def status_text(reply: dict[str, Any]) -> str:
    """A status reply in a few lines."""
    lines = [reachability_line(reply)]
    queue = reply.get("queue") or {}
    if queue:
        shown = ", ".join(f"{name} {value}" for name, value in sorted(queue.items()))
        lines.append(f"queue: {shown}")
    if reply.get("pending"):
        lines.append(f"kept here, not yet delivered: {reply['pending']} turns")
    if reply.get("degraded"):
        lines.append(f"degraded: {', '.join(reply['degraded'])}")
    return "\n".join(lines)


def _failure_text(reply: dict[str, Any]) -> str:
    return f"{reply.get('error_code')}: {reply.get('user_message')} ({reply.get('remediation')})"


def print_reply(reply: dict[str, Any], op: str, *, as_json: bool, out: TextIO | None = None) -> int:
    """Print ``reply`` of ``op`` (recall, publish, status); the exit status (status: 1 when
    memory is not reachable)."""
    out = out or sys.stdout
    ok = bool(reply.get("success"))
    if as_json:
        out.write(json.dumps(reply) + "\n")
    elif not ok:
        (sys.stderr if out is sys.stdout else out).write(_failure_text(reply) + "\n")
    elif op == "recall":
        out.write(recall_text(reply) + "\n")
    elif op == "status":
        out.write(status_text(reply) + "\n")
    else:
        out.write(f"published (event {reply.get('event_id')})\n")
    out.flush()
    if op == "status" and reply.get("redis_available") is False:
        return 1  # the report printed, and scripts told that memory is not reachable
    return 0 if ok else 1
