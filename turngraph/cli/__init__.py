"""The ``turngraph`` command line. Each subcommand lives in its own module with a
``register(subparsers)`` function; add the module's name to ``COMMAND_MODULES``."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_MODULES = (
    "turngraph.cli.run_cmd",
    "turngraph.cli.worker_cmd",
    "turngraph.cli.bridge_cmd",
    "turngraph.cli.mcp_cmd",
    "turngraph.cli.consent_cmd",
    "turngraph.cli.queue_cmd",
    "turngraph.cli.jobs_cmd",
    "turngraph.cli.graph_cmd",
    "turngraph.cli.scopes_cmd",
    "turngraph.cli.distill_cmd",
    "turngraph.cli.embeddings_cmd",
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
    args = build_parser().parse_args(argv)
    return int(args.handler(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
