"""``turngraph graph show|export|import`` and ``turngraph forget``: a scope of the graph,
looked at, carried elsewhere, or deleted."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO

from turngraph.app import load_ontology
from turngraph.clients import INTERACTIVE_GRAPH_RETRY_S, Clients, build_clients, resolve_endpoints
from turngraph.embedded.services import GRAPH_ENGINES
from turngraph.schemas.errors import ConfigurationError, TurngraphError
from turngraph.schemas.scopes import Scope
from turngraph.settings import Settings

__all__ = [
    "register", "run_export", "run_forget", "run_import", "run_indexes", "run_migrate", "run_show",
    "run_style",
]  # fmt: skip


@contextlib.contextmanager
def _clients(settings: Settings | None = None) -> Iterator[Clients]:
    """Configured URLs, or the embedded services if they run now (never waits for them)."""
    settings = settings or Settings()
    if settings.embedded:
        settings = resolve_endpoints(settings, wait_s=0.0)
    clients = build_clients(settings, graph_retry_s=INTERACTIVE_GRAPH_RETRY_S)
    try:
        yield clients
    finally:
        clients.close()


@contextlib.contextmanager
def _output(path: str) -> Iterator[IO[str]]:
    if path == "-":
        yield sys.stdout
        return
    with open(path, "w", encoding="utf-8") as out:
        yield out


def run_show(args: argparse.Namespace) -> int:
    from turngraph.inspection.html_view import require_viz, write_html_view
    from turngraph.producers.scope_hints import ScopeHints

    require_viz()
    scope = Scope(args.scope)
    settings = Settings()
    hints = ScopeHints(settings.data_dir).load()["workspaces"]
    folders = {key: str(hint.get("folder") or "") for key, hint in hints.items()}
    key = _scope_id(settings, scope, args.key, hashed=args.hashed)
    out = Path(args.output or f"turngraph-{scope.value}-{key}.html")
    with _clients(settings) as clients:
        view = write_html_view(
            clients.graph,
            clients.graph_database,
            scope,
            key,
            out,
            load_ontology(settings),
            max_nodes=args.max_nodes,
            folders=folders,
        )
    cut = f" (cut to {view.nodes} nodes: --max-nodes)" if view.truncated else ""
    print(f"wrote {view.path}: {view.nodes} nodes, {view.relationships} relationships{cut}")
    print(
        "open it in a browser (offline); to explore and query, Neo4j Browser: ops/neo4j/README.md"
    )
    return 0


def run_export(args: argparse.Namespace) -> int:
    from turngraph.inspection.export import write_graphml, write_jsonl
    from turngraph.workers.graph.subgraph import read_scope

    scope = Scope(args.scope)
    settings = Settings()
    key = _scope_id(settings, scope, args.key, hashed=args.hashed)
    with _clients(settings) as clients:
        labels = load_ontology(clients.settings).labels()
        subgraph = read_scope(clients.graph, clients.graph_database, scope, key, labels)
    with _output(args.output) as out:
        if args.format == "graphml":
            write_graphml(subgraph, out)
        else:
            write_jsonl(subgraph, scope, key, out)
    where = "stdout" if args.output == "-" else args.output
    print(
        f"exported {scope.value} {key}: {len(subgraph.nodes)} nodes, "
        f"{len(subgraph.relationships)} relationships to {where}",
        file=sys.stderr,
    )
    return 0


def run_import(args: argparse.Namespace) -> int:
    from turngraph.inspection.export import import_jsonl

    source = sys.stdin if args.path == "-" else open(args.path, encoding="utf-8")  # noqa: SIM115
    with source, _clients() as clients:
        nodes, relationships = import_jsonl(clients.graph, clients.graph_database, source)
    print(f"imported {nodes} nodes, {relationships} relationships")
    return 0


def run_forget(args: argparse.Namespace) -> int:
    from turngraph.forgetting import forget

    scope = Scope(args.scope)
    if not args.yes:
        if not sys.stdin.isatty():
            print("forget deletes the scope for good: add --yes to confirm", file=sys.stderr)
            return 2
        typed = input(f"Delete {scope.value} {args.key} for good? Type the key to confirm: ")
        if typed.strip() != args.key:
            print("not confirmed; nothing deleted")
            return 1
    report = forget(Settings(), scope, args.key, hashed=args.hashed, tenant=args.tenant)
    report.pop("success", None)
    print(json.dumps(report))
    if report.get("in_flight"):
        print(
            f"{report['in_flight']} turn(s) of this scope were being ingested meanwhile: "
            "stop its producers and run forget again",
            file=sys.stderr,
        )
    return 0


def run_migrate(args: argparse.Namespace) -> int:
    """Copy the data folder's other engine's graph into the one its services run now."""
    import neo4j

    from turngraph.embedded.graph_server import GraphServer
    from turngraph.embedded.neo4j_server import Neo4jServer
    from turngraph.embedded.services import read_endpoints
    from turngraph.logs import configure_logging
    from turngraph.workers.graph.graph_copy import copy_graph
    from turngraph.workers.graph.schema import ensure_schema

    settings = Settings()
    configure_logging(settings)  # stderr: stdout is the one line saying what was copied
    running = read_endpoints(settings.data_dir) if settings.embedded else None
    if running is None:
        raise ConfigurationError(
            "graph migrate copies between the embedded graphs of a data folder: start the "
            "one to copy into first (`turngraph services --graph ENGINE`); with configured "
            "servers, carry scopes with `turngraph graph export` and `turngraph graph import`"
        )
    source_engine, target_engine = args.source, running.graph_engine
    if source_engine == target_engine:
        raise ConfigurationError(
            f"the services run {target_engine} already: name the other engine with --from"
        )
    data_dir = settings.data_dir
    folder = data_dir / ("graph" if source_engine == "arcadedb" else "neo4j")
    if not folder.is_dir():
        raise ConfigurationError(f"no {source_engine} graph in {data_dir}: nothing to migrate")
    source = GraphServer(folder) if source_engine == "arcadedb" else Neo4jServer(folder, data_dir)
    print(f"starting the {source_engine} graph of {data_dir} to read it", file=sys.stderr)
    source.start()
    try:
        driver = neo4j.GraphDatabase.driver(source.uri, auth=(source.user, source.password))
        with driver, _clients(settings) as clients:
            ensure_schema(clients.graph, clients.graph_database, load_ontology(settings).labels())
            report = copy_graph(driver, source.database, clients.graph, clients.graph_database)
    finally:
        source.stop()
    print(
        f"copied {report.nodes} nodes, {report.relationships} relationships from "
        f"{source_engine} to {target_engine}; restart `turngraph up --graph {target_engine}` "
        "(or the recall workers) so recall reads them"
    )
    return 0


def run_indexes(args: argparse.Namespace) -> int:
    from turngraph.workers.graph.neo4j_only import apply_neo4j_only, neo4j_only_statements

    with _clients() as clients:
        onto = load_ontology(clients.settings)
        statements = neo4j_only_statements(onto.labels(), onto.relationship_types())
        applied = apply_neo4j_only(clients.graph, statements, clients.graph_database)
    if not applied:
        print("the graph server is not Neo4j: no Neo4j-only indexes to create")
    for name in applied:
        print(f"ensured {name}")
    return 0


def run_style(args: argparse.Namespace) -> int:
    from turngraph.inspection.browser_style import main as style_main

    return style_main(["--out", args.output, *(["--check"] if args.check else [])])


def _guarded(handler: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Project errors become one line and exit status 1, not a traceback."""

    def run(args: argparse.Namespace) -> int:
        try:
            return handler(args)
        except TurngraphError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1

    return run


def _scope_id(settings: Settings, scope: Scope, key: str, *, hashed: bool = False) -> str:
    """A raw key (folder, session id, user name) hashed like the producer; an id as is."""
    from turngraph.producers.scopes import ScopeHasher
    from turngraph.scope_keys import scope_id

    if hashed:
        return key
    return scope_id(ScopeHasher.for_data_dir(settings.data_dir), scope, key)


def _scope_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scope",
        required=True,
        choices=[s.value for s in Scope],
        help="which kind of scope KEY names",
    )
    parser.add_argument(
        "key",
        help="the workspace folder (e.g. .), session id or user name, hashed like the "
        "producer does; or a hashed id (w_..., s_..., u_...) as `turngraph scopes` lists",
    )
    parser.add_argument(
        "--hashed",
        action="store_true",
        help="KEY is a stored scope id whatever it looks like: do not hash it",
    )


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    graph = subparsers.add_parser("graph", help="look at, export or import a scope of the graph")
    actions = graph.add_subparsers(dest="graph_action", required=True)

    show = actions.add_parser(
        "show", help="write an HTML view of a scope: graph, legend, a node's properties on click"
    )
    _scope_arguments(show)
    show.add_argument("-o", "--output", help="HTML file (default turngraph-SCOPE-KEY.html)")
    show.add_argument(
        "--max-nodes",
        type=int,
        default=2_000,
        help="draw at most this many nodes (the page says when it was cut)",
    )
    show.set_defaults(handler=_guarded(run_show))

    export = actions.add_parser("export", help="a scope as JSON lines or GraphML")
    _scope_arguments(export)
    export.add_argument(
        "--format",
        choices=["jsonl", "graphml"],
        default="jsonl",
        help="JSON lines (re-importable) or GraphML (for graph tools)",
    )
    export.add_argument("-o", "--output", default="-", help="file, or - for stdout")
    export.set_defaults(handler=_guarded(run_export))

    importer = actions.add_parser("import", help="import a JSON lines export (idempotent)")
    importer.add_argument("path", help="file, or - for stdin")
    importer.set_defaults(handler=_guarded(run_import))

    migrate = actions.add_parser(
        "migrate",
        help="copy this data folder's other embedded graph (another engine's) into the one "
        "its services run now (idempotent)",
    )
    migrate.add_argument(
        "--from",
        dest="source",
        required=True,
        choices=GRAPH_ENGINES,
        help="the engine whose graph to copy (its folder in the data folder)",
    )
    migrate.set_defaults(handler=_guarded(run_migrate))

    indexes = actions.add_parser(
        "indexes", help="create the Neo4j-only full-text indexes for Browser (Neo4j only)"
    )
    indexes.set_defaults(handler=_guarded(run_indexes))

    style = actions.add_parser("style", help="write the Neo4j Browser style (GraSS)")
    style.add_argument(
        "-o", "--output", default="ops/neo4j/turngraph.grass", help="where to write the style"
    )
    style.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    style.set_defaults(handler=_guarded(run_style))

    forget = subparsers.add_parser(
        "forget", help="delete a session, workspace or user scope completely"
    )
    _scope_arguments(forget)
    forget.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    forget.add_argument(
        "--tenant",
        help="KEY is a tenant's hashed id (as `turngraph scopes` shows it on the tenant's "
        "machine): forget it in that tenant's scopes",
    )
    forget.set_defaults(handler=_guarded(run_forget))
