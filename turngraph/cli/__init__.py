"""The ``turngraph`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function; add the module's name to ``COMMAND_MODULES``."""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Sequence

from turngraph.cli.failures import describe_failure

COMMAND_MODULES = (
    "turngraph.cli.run_cmd",
    "turngraph.cli.worker_cmd",
    "turngraph.cli.bridge_cmd",
    "turngraph.cli.mcp_cmd",
    "turngraph.cli.consent_cmd",
    "turngraph.cli.queue_cmd",
    "turngraph.cli.credentials_cmd",
    "turngraph.cli.jobs_cmd",
    "turngraph.cli.graph_cmd",
    "turngraph.cli.scopes_cmd",
    "turngraph.cli.distill_cmd",
    "turngraph.cli.doctor_cmd",
    "turngraph.cli.embeddings_cmd",
    "turngraph.cli.hooks_cmd",
)
"""Modules that contribute subcommands, in the order ``--help`` lists them."""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="turngraph", description="Long-term memory for chat assistants in editors."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; whatever goes wrong ends in one line on stderr and exit status 1."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    if arguments[:1] == ["hook"]:  # editors run this on every prompt: no other command loads
        from turngraph.cli.hook_cmd import run_hook

        return run_hook(arguments[1:])
    args = build_parser().parse_args(arguments)
    # Commands that configure no logging of their own print only errors of the libraries
    # (the graph driver announces every retry at WARNING); entrypoints override this.
    logging.basicConfig(level=logging.ERROR)
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # the last boundary: people get a line, not a traceback
        print(f"turngraph {args.command}: {describe_failure(exc)}", file=sys.stderr)
        if os.environ.get("TURNGRAPH_TRACEBACK"):
            raise
        return 1


if __name__ == "__main__":
    sys.exit(main())
