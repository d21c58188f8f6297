"""``turngraph embeddings rebuild``: embed the stored turns whose vector is missing or
was made by another model, with the configured one (after a model change), without
stopping anything: see ``workers/ingest/rebuild.py``. On Neo4j with its vector index on
(``TURNGRAPH_NEO4J_BROWSER_INDEXES=all``), it also lists the vectors of turns stored while
the index was off, so the index holds every turn."""

from __future__ import annotations

import argparse

from turngraph.app import build_embedder
from turngraph.cli.graph_cmd import _clients
from turngraph.logs import configure_logging
from turngraph.schemas.errors import ConfigurationError
from turngraph.settings import Settings
from turngraph.workers.graph.neo4j_only import lists_vectors, server_is_neo4j
from turngraph.workers.graph.vectors import GraphVectors
from turngraph.workers.ingest.embeddings import MemoryEmbedder
from turngraph.workers.ingest.rebuild import rebuild_embeddings

__all__ = ["register", "run_rebuild"]


def run_rebuild(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)  # to stderr: stdout carries only the output
    embedder = build_embedder(settings)
    if embedder is None:
        raise ConfigurationError(
            "no embedding model configured: set TURNGRAPH_EMBEDDING_PROVIDER to local or openai"
        )
    with _clients(settings) as clients:
        on_neo4j = server_is_neo4j(clients.graph, clients.graph_database)
        lists = on_neo4j and lists_vectors(settings.neo4j_browser_indexes)
        vectors = GraphVectors(clients.graph, clients.graph_database, lists=lists)
        report = rebuild_embeddings(
            vectors.stale(embedder.model),
            MemoryEmbedder(embedder, vectors),
            clients.redis,
            settings.changes_stream,
        )
        listed = 0
        if lists:  # turns stored while the vector index was off get their list now
            for page in vectors.unlisted(embedder.model):
                vectors.save(embedder.model, page)
                listed += len(page)
    print(f"{report.embedded} turn(s) embedded with {embedder.model}")
    if listed:
        print(f"{listed} stored vector(s) listed for Neo4j's vector index")
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    embeddings = subparsers.add_parser("embeddings", help="stored memory vectors")
    actions = embeddings.add_subparsers(dest="action", required=True)
    rebuild = actions.add_parser(
        "rebuild", help="embed turns whose vector is missing or of another model (no downtime)"
    )
    rebuild.set_defaults(handler=run_rebuild)
