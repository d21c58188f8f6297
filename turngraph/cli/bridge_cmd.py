"""``turngraph bridge`` (stdio JSON lines) and one-shot ``turngraph publish`` / ``recall``.

The one-shots print the seed bridge's JSON contract and exit 0 on success, 1 on failure.
"""

from __future__ import annotations

import argparse
import getpass
import json
import sys
from pathlib import Path
from typing import Any

import structlog

from turngraph.clients import build_operations
from turngraph.lifecycle import StopSignal, stop_on_signals
from turngraph.logs import configure_logging
from turngraph.producers import bridge_io
from turngraph.producers.git_info import git_metadata
from turngraph.settings import Settings

log = structlog.get_logger(__name__)

BRIDGE_PROTOCOL = """\
Spawn once per editor window; write one JSON request per line on stdin (UTF-8), read one
reply per line on stdout, in order. Logs go to stderr.

  {"id": 1, "op": "publish", "event": {"session_id": "<chat id>", "workspace": "<folder>",
   "user": "<name>", "turn_index": 0, "role": "user", "content": "...",
   "client": {"name": "my-ext", "version": "1.0"}}}
  {"id": 2, "op": "recall", "query": "...", "workspace": "<folder>", "max_results": 5}
  {"id": 3, "op": "flush", "timeout_s": 2}
  {"id": 4, "op": "status"}

Distilled memory (answered by a maintenance worker within deadline_ms, default 30000):
  {"id": 5, "op": "summarize", "session_id": "<chat id>", "last_n": 10}
  {"id": 6, "op": "recap", "workspace": "<folder>", "budget_tokens": 1000}
     (default: the previous session; or "session_id"; "current_session_id" is skipped)
  {"id": 7, "op": "summary", "memory_id": "<a recall result's memory_id>"}
  {"id": 8, "op": "promote", "kind": "preference", "text": "...", "scope": "user",
   "workspace": "<folder>", "user": "<name>", "session_id": "<chat id>"}
  {"id": 9, "op": "context", "session_id": "<chat id>"}  (rolling context: send its
     "conversation_context" with recall)

Raw session_id / workspace / user are hashed here with this installation's salt before
anything leaves; occurred_at (ISO 8601 with timezone) defaults to now; "id" is echoed.
publish and promote need consent (turngraph consent enable); publish is fire-and-forget;
promote refuses text that looks like a secret (REFUSED); recall answers within deadline_ms
(default 750) or fails open. Requests are strict (unknown fields and
wrong JSON types are refused); out-of-range recall options are clamped and named in the
reply's "clamped". Every reply has "success"; a failure has "error_code"
(INVALID_JSON, INVALID_ENCODING, INVALID_REQUEST, UNKNOWN_OP, CONSENT_REQUIRED,
BACKEND_UNAVAILABLE, DEADLINE_EXCEEDED, NOT_FOUND, REFUSED, INTERNAL_ERROR), "user_message"
and "remediation". JSON Schemas: schemas/json/bridge_*.schema.json; TypeScript types:
producers/typescript/types/.
"""

ONE_SHOT_FLUSH_S = 3.0
"""How long ``turngraph publish`` waits for Redis to take the event."""


def run_bridge(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)  # logs go to stderr; stdout carries only replies
    stop_on_signals()  # SIGTERM or SIGINT: deliver what is buffered, then exit 0
    try:
        return bridge_io.serve(build_operations(settings), sys.stdin.buffer, sys.stdout.buffer)
    except StopSignal as stopped:
        log.info("stopped", signal=str(stopped))
        return 0


def _print(reply: dict[str, Any]) -> int:
    print(json.dumps(reply))
    return 0 if reply.get("success") else 1


def run_publish(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)
    content = sys.stdin.read() if args.content == "-" else args.content
    workspace = str(Path(args.workspace).resolve())
    event: dict[str, Any] = {
        "session_id": args.session,
        "workspace": workspace,
        "user": args.user,
        "turn_index": args.turn_index,
        "role": args.role,
        "content": content,
        "client": {"name": args.client_name, "version": args.client_version},
        "importance": args.importance,
    }
    if args.git:
        info = git_metadata(Path(workspace))
        if info is not None:
            event["git"] = info.model_dump(exclude_none=True)
    bridge = build_operations(settings)
    try:
        reply = bridge.handle_line(json.dumps({"op": "publish", "event": event}))
        if reply.get("success"):
            flushed = bridge.handle_line(json.dumps({"op": "flush", "timeout_s": ONE_SHOT_FLUSH_S}))
            if not flushed.get("success"):
                reply = {**flushed, "event_id": reply.get("event_id")}
        return _print(reply)
    finally:
        bridge.close()


def run_recall(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)
    request: dict[str, Any] = {
        "op": "recall",
        "query": args.query,
        "workspace": str(Path(args.workspace).resolve()),
        "max_results": args.max_results,
        "max_tokens": args.max_tokens,
    }
    if args.session:
        request["session_id"] = args.session
    if args.user:
        request["user"] = args.user
    bridge = build_operations(settings, deadline_ms=args.deadline_ms)
    try:
        return _print(bridge.handle_line(json.dumps(request)))
    finally:
        bridge.close()


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    bridge = subparsers.add_parser(
        "bridge",
        help="stdio JSON-lines bridge for editor extensions",
        description=BRIDGE_PROTOCOL,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    bridge.set_defaults(handler=run_bridge)

    publish = subparsers.add_parser("publish", help="publish one turn (prints JSON, exit 0/1)")
    publish.add_argument("content", help="the turn's text, or - to read it from stdin")
    publish.add_argument("--session", required=True, help="session key (hashed before sending)")
    publish.add_argument(
        "--turn-index", type=int, required=True, help="the turn's index in its session (0, 1, ...)"
    )
    publish.add_argument(
        "--role",
        default="user",
        choices=["user", "assistant", "system", "tool"],
        help="who said it (default user)",
    )
    publish.add_argument("--workspace", default=".", help="workspace folder (default: here)")
    publish.add_argument("--user", default=getpass.getuser(), help="user key (hashed)")
    publish.add_argument(
        "--client-name", default="turngraph-cli", help="the publishing client's name"
    )
    publish.add_argument("--client-version", default="0", help="the client's version")
    publish.add_argument(
        "--importance", type=float, default=0.5, help="0..1, how much it matters (default 0.5)"
    )
    publish.add_argument("--git", action="store_true", help="add branch, commit and dirty flag")
    publish.set_defaults(handler=run_publish)

    recall = subparsers.add_parser("recall", help="search the memory (prints JSON, exit 0/1)")
    recall.add_argument("query", help="what to look for, in plain words")
    recall.add_argument("--workspace", default=".", help="workspace folder (default: here)")
    recall.add_argument("--session", help="session key (hashed)")
    recall.add_argument("--user", help="user key (hashed)")
    recall.add_argument(
        "--max-results", type=int, default=5, help="results wanted (clamped to 1..50)"
    )
    recall.add_argument(
        "--max-tokens", type=int, default=1000, help="token budget (clamped to >= 100)"
    )
    recall.add_argument(
        "--deadline-ms",
        type=int,
        default=None,
        help="how long to wait before failing open (default 750)",
    )
    recall.set_defaults(handler=run_recall)
