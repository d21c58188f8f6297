"""Driver errors leave the graph package as ``schemas.errors`` types, classified once:
a statement the server cannot run is permanent; an unreachable server is transient."""

from __future__ import annotations

import socket

import neo4j
import pytest
from structlog.testing import capture_logs

from turngraph.clients import Clients
from turngraph.schemas.errors import BackendUnavailableError, PermanentError, TransientError
from turngraph.schemas.scopes import Scope
from turngraph.workers.graph.errors import GraphQueryError, GraphRejectedError
from turngraph.workers.graph.retry import DATABASE_ERROR_ATTEMPTS, run_write
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


def _count_marks(clients: Clients, mark: str) -> int:
    records, _, _ = clients.graph.execute_query(
        "MATCH (n:RerunMark {mark: $mark}) RETURN count(n) AS n",
        mark=mark,
        database_=clients.graph_database,
    )
    return int(records[0]["n"])


def test_a_database_error_is_rerun_and_the_write_commits_once(clients: Clients) -> None:
    """ArcadeDB can fail a read that races another transaction's rewrite of a large record
    with ``UnknownError`` (a ``DatabaseError``); the transaction is run again, not lost."""
    calls = []

    def work(tx: neo4j.ManagedTransaction) -> None:
        calls.append(1)
        tx.run("CREATE (:RerunMark {mark: 'once'})").consume()
        if len(calls) == 1:  # the server's failure, as the driver raises it
            raise neo4j.exceptions.DatabaseError("torn read")

    with capture_logs() as logs:
        run_write(clients.graph, clients.graph_database, work, action="mark")
    assert len(calls) == 2
    assert _count_marks(clients, "once") == 1  # the failed attempt rolled back
    reruns = [e for e in logs if e["event"] == "graph_write_rerun"]
    assert reruns == [
        {"event": "graph_write_rerun", "log_level": "info", "action": "mark",
         "code": "Neo.DatabaseError.General.UnknownError", "attempt": 1},
    ]  # fmt: skip


def test_a_lasting_database_error_leaves_as_transient_after_its_attempts(clients: Clients) -> None:
    calls = []

    def work(tx: neo4j.ManagedTransaction) -> None:
        calls.append(1)
        tx.run("CREATE (:RerunMark {mark: 'never'})").consume()
        raise neo4j.exceptions.DatabaseError("still failing")

    with pytest.raises(GraphRejectedError) as caught:
        run_write(clients.graph, clients.graph_database, work, action="mark")
    assert isinstance(caught.value, TransientError)
    assert len(calls) == DATABASE_ERROR_ATTEMPTS
    assert _count_marks(clients, "never") == 0


def test_a_write_the_driver_retries_is_counted_and_commits_once(clients: Clients) -> None:
    """Two workers' batches conflict (ArcadeDB's concurrent page modifications, Neo4j's
    deadlocks): the driver reruns the transaction itself; each rerun is logged with the
    write's action, so the conflicts can be counted (``bench.ingest``), not only absorbed."""
    calls = []

    def work(tx: neo4j.ManagedTransaction) -> None:
        calls.append(1)
        tx.run("CREATE (:RerunMark {mark: 'retried'})").consume()
        if len(calls) == 1:  # the server's deadlock, as the driver raises it
            raise neo4j.exceptions.TransientError("deadlock")

    with capture_logs() as logs:
        run_write(clients.graph, clients.graph_database, work, action="mark")
    assert len(calls) == 2
    assert _count_marks(clients, "retried") == 1  # the failed attempt rolled back
    retried = [e for e in logs if e["event"] == "graph_write_retried"]
    assert retried == [
        {"event": "graph_write_retried", "log_level": "warning", "action": "mark", "attempt": 2}
    ]
