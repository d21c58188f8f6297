"""``--graph arcadedb|neo4j`` of ``turngraph services`` and ``turngraph up``."""

from __future__ import annotations

import argparse

from turngraph.embedded.services import GRAPH_ENGINES
from turngraph.settings import Settings

__all__ = ["add_graph_option", "with_graph_option"]


def add_graph_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--graph",
        choices=GRAPH_ENGINES,
        default=None,
        help="the graph server to start when no URLs are set (default: "
        "TURNGRAPH_EMBEDDED_GRAPH, else arcadedb); neo4j is fetched once through Maven "
        "(Java 17+ and Maven needed) and serves Neo4j Browser",
    )


def with_graph_option(settings: Settings, args: argparse.Namespace) -> Settings:
    """``settings`` with the engine named on the command line, if one was."""
    if args.graph is None:
        return settings
    return settings.model_copy(update={"embedded_graph": args.graph})
