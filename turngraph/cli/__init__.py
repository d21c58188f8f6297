"""The ``turngraph`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function; add the module and its commands to ``COMMANDS``.

Start-up is kept light: ``turngraph --help`` imports no command module (the listing is
``COMMANDS``), and a command imports only its own module, so the drivers, the LLM client
and the MCP SDK load only for the commands that use them (``python -m bench.startup``).
The stop signals are handled from the first instruction, before any of that.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import threading
from collections.abc import Sequence

from turngraph.lifecycle import stop_on_signals

__all__ = [
    "ALL", "COMMANDS", "LONG_RUNNING", "PARSER_DEFAULT", "Sequence", "build_parser", "main",
    "output_closed", "parse_arguments", "stop_on_signals",
]  # fmt: skip

COMMANDS: tuple[tuple[str, dict[str, str]], ...] = (
    ("turngraph.cli.run_cmd", {
        "up": "run the whole system (embedded services, workers) and show a demo",
    }),
    ("turngraph.cli.worker_cmd", {
        "worker": "run an ingest, recall or maintenance worker",
        "services": "run the embedded Redis and graph servers",
    }),
    ("turngraph.cli.bridge_cmd", {
        "bridge": "stdio JSON-lines bridge for editor extensions",
        "publish": "publish one turn (exit 0/1)",
        "recall": "search the memory (exit 0/1)",
        "status": "whether memory is reachable now, and the queue's counters (exit 0/1)",
    }),
    ("turngraph.cli.endpoint_cmd", {
        "endpoint": "the always-warm local endpoint for hooks and the CLI (HTTP on loopback)",
    }),
    ("turngraph.cli.mcp_cmd", {
        "mcp": "MCP server on stdio for editors (recall, remember, recap, promote, forget...)",
    }),
    ("turngraph.cli.consent_cmd", {
        "consent": "enable, disable or show publishing for a workspace",
    }),
    ("turngraph.cli.queue_cmd", {"queue": "inspect the bounded ingest queue"}),
    ("turngraph.cli.credentials_cmd", {
        "credentials": "tenant credentials for producers (operators: issue, revoke, list)",
    }),
    ("turngraph.cli.jobs_cmd", {"jobs": "failed ingest jobs: list, requeue, purge"}),
    ("turngraph.cli.graph_cmd", {
        "graph": "look at, export or import a scope of the graph",
        "forget": "delete a session, workspace or user scope completely",
    }),
    ("turngraph.cli.scopes_cmd", {
        "scopes": "list workspaces and sessions with their folder names, first turn and counts",
    }),
    ("turngraph.cli.distill_cmd", {
        "recap": "a budgeted recap of a session",
        "summarize": "summarize and store the last N turns of a session",
        "compact": "merge summaries into decision records (due topics, or one topic)",
    }),
    ("turngraph.cli.doctor_cmd", {
        "doctor": "check Redis, the graph, the LLM and embedding endpoints, the queue and the "
        "workers; exit 1 on any failure",
    }),
    ("turngraph.cli.embeddings_cmd", {"embeddings": "stored memory vectors"}),
    ("turngraph.cli.hooks_cmd", {
        "hooks": "install, remove or show editor hooks (capture and recall, no MCP needed)",
        "hook": "run one hook (editors call this; reads the payload on stdin, exits 0)",
    }),
)  # fmt: skip
"""Modules that contribute subcommands, with each command's one-line help, in the order
``--help`` lists them."""

LONG_RUNNING = frozenset({"up", "worker", "services", "bridge", "mcp", "endpoint"})
"""Commands for which a stop signal is the ordinary end (exit status 0)."""

PARSER_DEFAULT = "command_parser"
"""The parsed arguments' attribute holding the parser of the command that was named."""

ALL = "*"
"""``build_parser(ALL)``: every command in full (tests, documentation)."""


def build_parser(command: str | None = ALL) -> argparse.ArgumentParser:
    """The parser: every command in full (``ALL``), or only ``command``'s module in full
    and the others as their one-line help (``None``: none in full, for ``--help``)."""
    parser = argparse.ArgumentParser(
        prog="turngraph", description="Long-term memory for chat assistants in editors."
    )
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for module, commands in COMMANDS:
        if command == ALL or command in commands:
            importlib.import_module(module).register(subparsers)
        else:
            for name, help_text in commands.items():
                subparsers.add_parser(name, help=help_text, description=help_text)
    _describe_every_command(parser)
    return parser


def _describe_every_command(parser: argparse.ArgumentParser) -> None:
    """A command's own ``--help`` opens with its one-line help when it has no description."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                if not sub.description and helps.get(name):
                    sub.description = helps[name]
                # the innermost command's parser wins (argparse copies a subcommand's
                # namespace over its parent's): its usage for an unknown option
                sub.set_defaults(**{PARSER_DEFAULT: sub})
                _describe_every_command(sub)


def _command_in(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (the first word that is not an option), if any."""
    return next((arg for arg in argv if not arg.startswith("-")), None)


def parse_arguments(argv: Sequence[str]) -> argparse.Namespace:
    """``argv`` parsed, or ``SystemExit`` with the usage of the command it names (exit
    status 2; ``--help``: 0): an unknown option shows that command's usage, not the
    top-level one."""
    parser = build_parser(_command_in(argv))
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        own: argparse.ArgumentParser = getattr(args, PARSER_DEFAULT, parser)
        own.error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; whatever goes wrong ends in one line on stderr and exit status 1,
    and a stop signal at any moment in one line too."""
    # First: SIGTERM and SIGINT (even when SIGINT came in ignored, as in a script's
    # background job) stop the command in one line from here on, imports included.
    # (Only the main thread may set handlers: a caller running commands from a thread
    # keeps its own.)
    if threading.current_thread() is threading.main_thread():
        stop_on_signals()
    argv = sys.argv[1:] if argv is None else list(argv)
    command = _command_in(argv)
    try:
        if command == "hook" and argv[:1] == ["hook"]:  # editors run it on every prompt
            # No pydantic plugins are used; without this each model built at import scans
            # the metadata of every installed package for some (docs/hooks.md).
            os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
            from turngraph.cli.hook_cmd import run_hook

            return run_hook(argv[1:])
        status = _run(parse_arguments(argv))
        sys.stdout.flush()  # here, where a closed pipe can still be handled
        return status
    except BrokenPipeError:
        return output_closed()
    except KeyboardInterrupt as stopped:  # StopSignal, or Python's own for a plain Ctrl-C
        name = str(stopped) if str(stopped).startswith("SIG") else "SIGINT"
        print(f"turngraph {command or ''}".rstrip() + f": stopped ({name})", file=sys.stderr)
        return 0 if command in LONG_RUNNING else 128 + _signal_number(name)


def _run(args: argparse.Namespace) -> int:
    import logging

    from turngraph.cli.failures import describe_failure

    # Commands that configure no logging of their own print only errors of the libraries
    # (the graph driver announces every retry at WARNING); entrypoints override this.
    logging.basicConfig(level=logging.ERROR)
    try:
        return int(args.handler(args) or 0)
    except BrokenPipeError:  # `turngraph queue status | head`: the reader has had enough
        return output_closed()
    except Exception as exc:  # the last boundary: people get a line, not a traceback
        parser = getattr(args, PARSER_DEFAULT, None)
        prog = parser.prog if parser is not None else "turngraph"
        print(f"{prog}: {describe_failure(exc)}", file=sys.stderr)
        if os.environ.get("TURNGRAPH_TRACEBACK"):
            raise
        return 1


def output_closed() -> int:
    """What a command does when whoever read its output stopped reading (``| head``): what
    is still buffered goes nowhere, without a traceback at exit; the status is the one of
    a program that SIGPIPE ended (the way Python's documentation handles EPIPE)."""
    import signal

    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    return 128 + int(signal.SIGPIPE)


def _signal_number(name: str) -> int:
    import signal

    try:
        return int(signal.Signals[name])
    except KeyError:
        return int(signal.SIGINT)


if __name__ == "__main__":
    sys.exit(main())
