"""``turngraph bridge`` (stdio JSON lines) and the one-shots ``turngraph publish``,
``recall`` and ``status``.

The one-shots ask the running endpoint first (``turngraph.fast_path``) and take the full
code path when none is up; either way they print through ``turngraph.reply_text`` (with
``--json``, the bridge's reply) and exit 0 on success, 1 on failure. Only the standard
library is imported at the top.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from turngraph.fast_path import (
    JSON_HELP,
    ONE_SHOT_FLUSH_S,
    PUBLISH_OPTIONS,
    PUBLISH_REQUIRED,
    RECALL_OPTIONS,
    ROLES,
    publish_event,
    recall_request,
)
from turngraph.reply_text import print_reply

__all__ = [
    "BRIDGE_PROTOCOL", "JSON_HELP", "ONE_SHOT_FLUSH_S", "Unconfigured", "register", "run_bridge",
    "run_publish", "run_recall", "run_status",
]  # fmt: skip

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


def run_bridge(args: argparse.Namespace) -> int:
    import structlog

    from turngraph.clients import build_operations
    from turngraph.lifecycle import StopSignal, stop_on_signals
    from turngraph.logs import configure_logging
    from turngraph.producers import bridge_io
    from turngraph.settings import Settings

    stop_on_signals()  # SIGTERM or SIGINT: deliver what is buffered, then exit 0
    try:
        try:
            settings = Settings()
            configure_logging(settings)  # logs go to stderr; stdout carries only replies
            operations: bridge_io.LineHandler = build_operations(settings)
        except Exception as exc:  # settings or data folder that cannot work: say so per line
            from turngraph.cli.failures import describe_failure

            problem = describe_failure(exc).removeprefix("error: ")
            print(f"turngraph bridge: error: {problem}", file=sys.stderr)
            bridge_io.serve(Unconfigured(problem), sys.stdin.buffer, sys.stdout.buffer)
            return 1
        return bridge_io.serve(operations, sys.stdin.buffer, sys.stdout.buffer)
    except StopSignal as stopped:
        structlog.get_logger(__name__).info("stopped", signal=str(stopped))
        return 0


class Unconfigured:
    """The bridge when it cannot be built (an invalid setting, a data folder it cannot
    write): every request still gets its reply, ``BACKEND_UNAVAILABLE`` naming the
    problem, so an editor shows why instead of losing its bridge without a word."""

    def __init__(self, problem: str) -> None:
        self.problem = problem

    def handle_line(self, line: str) -> dict[str, Any]:
        """The refusal, with the request's ``id`` when it can be read."""
        from turngraph.schemas.bridge_common import error_reply
        from turngraph.schemas.errors import ErrorCode
        from turngraph.schemas.json_lines import request_id

        reply = error_reply(
            ErrorCode.BACKEND_UNAVAILABLE,
            f"the bridge cannot start: {self.problem}",
            "fix it where the editor starts the bridge (its environment or .env), "
            "then restart the bridge",
        ).model_dump(mode="json", exclude_none=True)
        found = request_id(line)
        return {"id": found, **reply} if found is not None else reply

    def close(self) -> None:
        """Nothing to deliver."""


def _through_endpoint(requests: list[tuple[str, dict[str, Any]]]) -> dict[str, Any] | None:
    """The reply of the running endpoint to ``requests`` (op, body), sent in order while
    each succeeds; None when no endpoint answers (then the full code path runs)."""
    from turngraph.endpoint.client import EndpointUnavailable, find

    client = find()
    if client is None:
        return None
    reply: dict[str, Any] = {}
    try:
        for op, body in requests:
            answer = client.call(op, body)
            if op == "flush" and reply:
                if not answer.get("success"):
                    return {**answer, "event_id": reply.get("event_id")}
                continue
            reply = answer
            if not reply.get("success"):
                break
    except EndpointUnavailable:
        return None
    return reply


def _full_path(deadline_ms: int | None = None) -> Any:
    """The operations on their own connection (no endpoint running). Warnings and errors
    only on stderr: a one-shot's connection notes (``bridge_connected``) are not news."""
    import logging

    from turngraph.clients import build_operations
    from turngraph.logs import configure_logging
    from turngraph.settings import Settings

    settings = Settings()
    level = logging.getLevelName(settings.log_level.upper())
    if not isinstance(level, int) or level < logging.WARNING:
        settings = settings.model_copy(update={"log_level": "WARNING"})
    configure_logging(settings)
    return build_operations(settings, deadline_ms=deadline_ms)


def run_publish(args: argparse.Namespace) -> int:
    content = sys.stdin.read() if args.content == "-" else args.content
    event = publish_event(vars(args), content)
    if args.git:
        from turngraph.producers.git_info import git_metadata

        info = git_metadata(Path(event["workspace"]))
        if info is not None:
            event["git"] = info.model_dump(exclude_none=True)
    fast = _through_endpoint(
        [("publish", {"event": event}), ("flush", {"timeout_s": ONE_SHOT_FLUSH_S})]
    )
    if fast is not None:
        return print_reply(fast, "publish", as_json=args.json)
    bridge = _full_path()
    try:
        reply = bridge.handle_line(json.dumps({"op": "publish", "event": event}))
        if reply.get("success"):
            flushed = bridge.handle_line(json.dumps({"op": "flush", "timeout_s": ONE_SHOT_FLUSH_S}))
            if not flushed.get("success"):
                reply = {**flushed, "event_id": reply.get("event_id")}
        return print_reply(reply, "publish", as_json=args.json)
    finally:
        bridge.close()


def run_recall(args: argparse.Namespace) -> int:
    request = recall_request(vars(args))
    fast = _through_endpoint([("recall", request)])
    if fast is not None:
        return print_reply(fast, "recall", as_json=args.json)
    bridge = _full_path(args.deadline_ms)
    try:
        reply = bridge.handle_line(json.dumps({"op": "recall", **request}))
        return print_reply(reply, "recall", as_json=args.json)
    finally:
        bridge.close()


def run_status(args: argparse.Namespace) -> int:
    fast = _through_endpoint([("status", {})])
    if fast is not None:
        return print_reply(fast, "status", as_json=args.json)
    bridge = _full_path()
    try:
        return print_reply(bridge.handle_line('{"op": "status"}'), "status", as_json=args.json)
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

    publish = subparsers.add_parser("publish", help="publish one turn (exit 0/1)")
    publish.add_argument("content", help="the turn's text, or - to read it from stdin")
    for flag, (dest, kind, default, help_text) in PUBLISH_OPTIONS.items():
        publish.add_argument(
            flag, dest=dest, type=kind, default=default, help=help_text,
            required=flag in PUBLISH_REQUIRED, choices=ROLES if flag == "--role" else None,
        )  # fmt: skip
    publish.add_argument("--git", action="store_true", help="add branch, commit and dirty flag")
    publish.add_argument("--json", action="store_true", help=JSON_HELP)
    publish.set_defaults(handler=run_publish)

    recall = subparsers.add_parser("recall", help="search the memory (exit 0/1)")
    recall.add_argument("query", help="what to look for, in plain words")
    for flag, (dest, kind, default, help_text) in RECALL_OPTIONS.items():
        recall.add_argument(flag, dest=dest, type=kind, default=default, help=help_text)
    recall.add_argument("--json", action="store_true", help=JSON_HELP)
    recall.set_defaults(handler=run_recall)

    status = subparsers.add_parser(
        "status", help="whether memory is reachable now, and the queue's counters (exit 0/1)"
    )
    status.add_argument("--json", action="store_true", help=JSON_HELP)
    status.set_defaults(handler=run_status)
