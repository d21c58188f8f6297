"""The CLI's fast path: ``turngraph recall``, ``publish`` and ``status`` answered by the
running endpoint before anything else is imported (``turngraph.console`` asks here first).

A command line it reads in full goes to the endpoint through ``turngraph.endpoint.client``
(standard library only); anything else (an option it does not list, ``--help``, a bad
value, ``publish -``), and these when no endpoint answers, runs the full command line.
``turngraph.cli.bridge_cmd`` builds its options and requests from this module, so the two
paths cannot drift apart. docs/endpoint.md ("The command line's fast path").
"""

from __future__ import annotations

import sys

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (the fast path)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JSON_HELP", "ONE_SHOT_FLUSH_S", "PUBLISH_OPTIONS", "PUBLISH_REQUIRED", "RECALL_OPTIONS",
    "ROLES", "answer", "fast_request", "publish_event", "recall_request",
]  # fmt: skip

RECALL_OPTIONS: dict[str, tuple[str, type, Any, str]] = {
    "--workspace": ("workspace", str, ".", "workspace folder (default: here)"),
    "--session": ("session", str, None, "session key (hashed)"),
    "--user": ("user", str, None, "user key (hashed)"),
    "--max-results": ("max_results", int, 5, "results wanted (clamped to 1..50)"),
    "--max-tokens": ("max_tokens", int, 1000, "token budget (clamped to >= 100)"),
    "--deadline-ms": (
        "deadline_ms", int, None, "how long to wait before failing open (default 750)",
    ),
}  # fmt: skip
"""``turngraph recall``'s options: flag -> (attribute, type, default, help)."""

ROLES = ("user", "assistant", "system", "tool")
"""Who said a published turn."""

PUBLISH_OPTIONS: dict[str, tuple[str, type, Any, str]] = {
    "--session": ("session", str, None, "session key (hashed before sending)"),
    "--turn-index": ("turn_index", int, None, "the turn's index in its session (0, 1, ...)"),
    "--role": ("role", str, "user", "who said it (default user)"),
    "--workspace": ("workspace", str, ".", "workspace folder (default: here)"),
    "--user": ("user", str, None, "user key (hashed; default: your login name)"),
    "--client-name": ("client_name", str, "turngraph-cli", "the publishing client's name"),
    "--client-version": ("client_version", str, "0", "the client's version"),
    "--importance": ("importance", float, 0.5, "0..1, how much it matters (default 0.5)"),
}  # fmt: skip
"""``turngraph publish``'s options but ``--git`` (full path only): flag -> (attribute,
type, default, help)."""

PUBLISH_REQUIRED = ("--session", "--turn-index")
"""The options ``turngraph publish`` cannot do without."""

ONE_SHOT_FLUSH_S = 3.0
"""How long ``turngraph publish`` waits for Redis to take the event."""

JSON_HELP = "print the reply object (the bridge's JSON contract) instead of a listing"


def recall_request(values: dict[str, Any]) -> dict[str, Any]:
    """The recall request (the bridge's ``recall`` op, without ``op``) for parsed values."""
    import os

    request: dict[str, Any] = {
        "query": values["query"],
        "workspace": os.path.realpath(values["workspace"]),
        "max_results": values["max_results"],
        "max_tokens": values["max_tokens"],
    }
    for name in ("session", "user"):
        if values.get(name):
            request["session_id" if name == "session" else name] = values[name]
    if values.get("deadline_ms") is not None:
        request["deadline_ms"] = values["deadline_ms"]
    return request


def publish_event(values: dict[str, Any], content: str) -> dict[str, Any]:
    """The event ``turngraph publish`` sends (the bridge's ``publish`` op's ``event``)."""
    import os

    if values.get("user") is None:
        import getpass

        values = {**values, "user": getpass.getuser()}
    return {
        "session_id": values["session"],
        "workspace": os.path.realpath(values["workspace"]),
        "user": values["user"],
        "turn_index": values["turn_index"],
        "role": values["role"],
        "content": content,
        "client": {"name": values["client_name"], "version": values["client_version"]},
        "importance": values["importance"],
    }


def _values(
    args: list[str], options: dict[str, tuple[str, type, Any, str]]
) -> dict[str, Any] | None:
    """``args`` read against ``options`` (plus ``--json`` and positionals under
    ``"positional"``); None for anything it does not read for certain."""
    values: dict[str, Any] = {dest: default for dest, _, default, _ in options.values()}
    values["json"], positional = False, []
    rest = iter(args)
    for arg in rest:
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            continue
        name, has_value, value = arg.partition("=")
        if name == "--json" and not has_value:
            values["json"] = True
            continue
        if name not in options:
            return None  # --help, --, a short or abbreviated option: argparse's to answer
        if not has_value:
            value = next(rest, "-")
            if value.startswith("-"):
                return None
        dest, kind, _, _ = options[name]
        try:
            values[dest] = kind(value)
        except ValueError:
            return None
    values["positional"] = positional
    return values


def fast_request(argv: list[str]) -> tuple[str, dict[str, Any], bool] | None:
    """``(op, body, as_json)`` for a command line the endpoint answers; None otherwise."""
    command, args = (argv[0], argv[1:]) if argv else ("", [])
    if command == "publish":
        values = _values(args, PUBLISH_OPTIONS)
        if (
            values is None
            or len(values["positional"]) != 1
            or values["positional"][0] == "-"
            or values["role"] not in ROLES
            or any(values[PUBLISH_OPTIONS[flag][0]] is None for flag in PUBLISH_REQUIRED)
        ):
            return None
        return "publish", {"event": publish_event(values, values["positional"][0])}, values["json"]
    if command == "recall":
        values = _values(args, RECALL_OPTIONS)
        if values is None or len(values["positional"]) != 1:
            return None
        values["query"] = values["positional"][0]
        return "recall", recall_request(values), values["json"]
    if command == "status":
        values = _values(args, {})
        if values is None or values["positional"]:
            return None
        return "status", {}, values["json"]
    return None


def answer(op: str, body: dict[str, Any], as_json: bool) -> int | None:
    """Print the running endpoint's reply to ``op`` with ``body``; the exit status, or
    None when no endpoint answered (nothing printed)."""
    from turngraph.endpoint.client import EndpointUnavailable, find

    client = find()
    if client is None:
        return None
    try:
        reply = client.call(op, body)
        if op == "publish" and reply.get("success"):  # answered once Redis has it
            flushed = client.call("flush", {"timeout_s": ONE_SHOT_FLUSH_S})
            if not flushed.get("success"):
                reply = {**flushed, "event_id": reply.get("event_id")}
    except EndpointUnavailable:
        return None
    from turngraph.reply_text import print_reply

    status = print_reply(reply, op, as_json=as_json)
    sys.stdout.flush()
    return status
