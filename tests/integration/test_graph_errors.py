"""Driver errors leave the graph package as ``schemas.errors`` types, classified once:
a statement the server cannot run is permanent; an unreachable server is transient."""

from __future__ import annotations

import socket

import neo4j
import pytest

from turngraph.clients import Clients
from turngraph.schemas.errors import BackendUnavailableError, PermanentError, TransientError
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.errors import GraphQueryError
from turngraph.workers.graph.retry import run_write
from turngraph.workers.graph.schema import ensure_schema
from turngraph.workers.graph.subgraph import read_scope

pytestmark = [pytest.mark.integration, pytest.mark.both_engines]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_statement_the_server_cannot_run_is_permanent(clients: Clients) -> None:
    def work(tx: neo4j.ManagedTransaction) -> None:
        tx.run("MATCH (n RETURN n").consume()

    with pytest.raises(GraphQueryError) as caught:
        run_write(clients.graph, clients.graph_database, work)
    assert isinstance(caught.value, PermanentError)
    assert isinstance(caught.value.__cause__, neo4j.exceptions.Neo4jError)


def test_an_unreachable_server_is_transient_on_every_path() -> None:
    driver = neo4j.GraphDatabase.driver(
        f"bolt://127.0.0.1:{_free_port()}",
        auth=("root", "x"),
        connection_timeout=1.0,
        max_transaction_retry_time=0.5,
    )
    try:
        with pytest.raises(BackendUnavailableError):
            run_write(driver, None, lambda tx: tx.run("RETURN 1").consume())
        with pytest.raises(BackendUnavailableError):
            read_scope(driver, None, Scope.SESSION, "s1", ["File"])
        with pytest.raises(TransientError):
            ensure_schema(driver, None, ["File"])
    finally:
        driver.close()
