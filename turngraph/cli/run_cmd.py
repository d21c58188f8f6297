"""``turngraph up``: the whole system on embedded defaults, with a demo that shows it working.

It runs the embedded servers, the workers and the local endpoint (``turngraph endpoint``,
docs/endpoint.md) as supervised children."""

from __future__ import annotations

import argparse
import contextlib
import functools
import os
import socket
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import neo4j
import redis
import structlog

from turngraph import demo
from turngraph.cli.engine_option import add_graph_option, with_graph_option
from turngraph.clients import with_endpoints
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.embedded.redis_server import without_password
from turngraph.lifecycle import StopSignal, stop_on_signals
from turngraph.logs import configure_logging
from turngraph.producers.connection import open_publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings
from turngraph.supervisor import ChildProcess, LineBudget, Supervisor, stop_all
from turngraph.workers.graph.identity import read_graph_identity, stored_event_ids
from turngraph.workers.ingest.markers import recorded_identity
from turngraph.workers.recall.replica import process_is_ready

__all__ = [
    "DEMO_TIMEOUT_S", "browser_lines", "engine_switch_notice", "register", "run_demo", "run_up",
]  # fmt: skip

log = structlog.get_logger(__name__)

DEMO_TIMEOUT_S = 120.0
"""How long the demo waits for its conversation to be ingested (a loaded machine, a cold
JVM), for the recall worker to be ready, and then for the answer to name it."""

WORKER_START_TIMEOUT_S = 600.0
"""How long the demo waits for an ingest worker to set up the graph before it publishes
(a new graph's schema on a cold Neo4j: 127 schema transactions, over a minute on a loaded
2-core machine)."""


@contextlib.contextmanager
def _services(settings: Settings) -> Iterator[tuple[dict[str, str], EmbeddedServices | None]]:
    """Embedded services when no URLs are configured; yields the children's environment
    and the services (None with URLs configured)."""
    if not settings.embedded:
        yield {}, None
        return
    services = EmbeddedServices(settings.data_dir, settings.embedded_graph)
    with services as endpoints:
        print(f"data folder     {settings.data_dir}")
        print(f"embedded Redis  {without_password(endpoints.redis_url)}")
        print(f"embedded graph  {endpoints.graph_uri} ({endpoints.graph_engine})")
        if endpoints.graph_engine == "neo4j":
            print("\n".join(browser_lines(endpoints, settings.data_dir)))
        switched = engine_switch_notice(endpoints.redis_url, endpoints.graph_engine)
        if switched:
            print(switched)
        yield endpoints.as_env(), services


def engine_switch_notice(redis_url: str, engine: str) -> str | None:
    """One line when this data folder's memory was stored with the other graph engine:
    the graph starting now is another one, and how to carry the memory over."""
    conn = redis.Redis.from_url(redis_url, socket_timeout=5)
    try:
        recorded = recorded_identity(conn)
    except redis.RedisError:
        return None
    finally:
        conn.close()
    if recorded is None or recorded.engine == engine:
        return None
    return (
        f"note: this data folder's memory so far is in its {recorded.engine} graph and "
        f"{engine} has its own: copy it over with `turngraph graph migrate --from "
        f"{recorded.engine}` while this runs, or go back with `turngraph up --graph "
        f"{recorded.engine}`"
    )


def browser_lines(endpoints: ServiceEndpoints, data_dir: Path) -> list[str]:
    """How to open Neo4j Browser on the embedded Neo4j ready to connect: its address with
    the form filled in (URL, user, database), where the password is, the style to apply."""
    from turngraph.embedded.neo4j_server import browser_login_url, password_file

    login = browser_login_url(
        endpoints.studio_url, endpoints.graph_uri, endpoints.graph_user, endpoints.graph_database
    )
    return [
        f"Neo4j Browser   {login}",
        f"                user {endpoints.graph_user} (filled in); password: the contents of "
        f"{password_file(data_dir)}",
        "                style: run `:style`, drop ops/neo4j/turngraph.grass on its frame",
    ]


def _worker_processes(
    env: dict[str, str], ingest_workers: int, budget: LineBudget
) -> list[ChildProcess]:
    """``up``'s children: recall first (the demo asks it), maintenance, ``ingest_workers``
    ingest workers, and the local endpoint (``turngraph endpoint``); their output goes to
    the data folder's ``logs/`` and, within ``budget``, to the terminal."""
    base = {"TURNGRAPH_LOG_LEVEL": "WARNING", **os.environ}
    if sys.stderr.isatty():  # the children's output passes through a pipe: say where it ends
        base.setdefault("TURNGRAPH_LOG_FORMAT", "console")
    env = {**base, **env}
    kinds = ["recall", "maintenance"] + ["ingest"] * ingest_workers
    names = [
        f"{kind}-{kinds[: i + 1].count(kind)}" if kind == "ingest" else kind
        for i, kind in enumerate(kinds)
    ]
    argv = [sys.executable, "-m", "turngraph.cli"]
    workers = [
        ChildProcess(name, [*argv, "worker", kind], env, budget)
        for name, kind in zip(names, kinds, strict=True)
    ]
    # The endpoint finds the embedded services as the user's commands do (services.json),
    # so consent granted from a shell is the consent it checks.
    return [*workers, ChildProcess("endpoint", [*argv, "endpoint"], base, budget)]


@contextlib.contextmanager
def _workers(workers: list[ChildProcess]) -> Iterator[list[ChildProcess]]:
    try:
        for worker in workers:
            worker.start()
        yield workers
    finally:
        stop_all(workers)


def _ingest_ready(conn: redis.Redis, graph: neo4j.Driver, database: str | None) -> bool:
    """An ingest worker has set up this graph (its schema, its identity) and checked the
    ingested markers against it: the identity Redis records is this graph's."""
    recorded = recorded_identity(conn)
    current = read_graph_identity(graph, database)
    return recorded is not None and current is not None and recorded.graph_id == current.graph_id


def _not_ready(what: str, worker: ChildProcess, log_dir: Path, timeout_s: float) -> str:
    log_file = log_dir / f"{worker.name}.log"
    if worker.died():
        return f"the {what} stopped before it was ready: see {log_file}"
    return f"the {what} was not ready within {timeout_s:.0f}s: see {log_file}"


def run_demo(settings: Settings, workers: list[ChildProcess], log_dir: Path) -> bool:
    """Publish the demo conversation once an ingest worker has set up the graph, wait
    until the graph holds it and the recall worker has applied it, then ask."""
    assert settings.redis_url and settings.graph_uri
    recall_worker = workers[0]
    ingest = [worker for worker in workers if worker.name.startswith("ingest-")]
    conn = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    graph = neo4j.GraphDatabase.driver(
        settings.graph_uri,
        auth=(settings.graph_user, settings.graph_password.get_secret_value()),
        notifications_min_severity="OFF",
    )
    try:
        # A new graph (first run, another engine) gets its schema first: on a cold Neo4j
        # and a loaded machine that took longer than the demo's own wait.
        if not demo.wait_for(
            lambda: _ingest_ready(conn, graph, settings.graph_database),
            WORKER_START_TIMEOUT_S,
            lambda: any(not worker.died() for worker in ingest),
        ):
            print(_not_ready("ingest worker", ingest[0], log_dir, WORKER_START_TIMEOUT_S))
            return False
        return _publish_and_ask(settings, conn, graph, recall_worker, log_dir)
    finally:
        graph.close()
        conn.close()


def _publish_and_ask(
    settings: Settings,
    conn: redis.Redis,
    graph: neo4j.Driver,
    recall_worker: ChildProcess,
    log_dir: Path,
) -> bool:
    scopes = demo.DemoScopes.hashed(ScopeHasher.for_data_dir(settings.data_dir))
    # its own workspace, named in `turngraph scopes`, removable with `turngraph forget`
    ScopeHints(settings.data_dir).note(
        workspace_id=scopes.workspace, raw_workspace=demo.DEMO_WORKSPACE, session_id=scopes.session
    )
    events = demo.demo_events(scopes)
    with open_publisher(settings) as publisher:
        for event in events:
            publisher.publish(event)
        publisher.flush(timeout_s=10)
        stats = publisher.stats()
    counts = {name: value for name, value in stats.as_dict().items() if value}
    print(f"published {len(events)} demo turns: {counts}")
    stored = functools.partial(stored_event_ids, graph, settings.graph_database)
    if not demo.wait_until_ingested(conn, events, DEMO_TIMEOUT_S, stored):
        print(f"the demo turns were not ingested within {DEMO_TIMEOUT_S:.0f}s")
        return False
    # The recall worker of this run may still be reading the graph, or behind the
    # change stream: wait until its own replica's heartbeat says the memories are
    # loaded and the stream applied as far as it reached once the turns were ingested.
    host, pid = socket.gethostname(), recall_worker.pid or 0
    last: Any = conn.xrevrange(settings.changes_stream, count=1)
    applied = last[0][0].decode() if last else "0-0"
    if not demo.wait_for(
        lambda: process_is_ready(conn, host, pid, applied=applied),
        DEMO_TIMEOUT_S,
        lambda: not recall_worker.died(),
    ):
        print(_not_ready("recall worker", recall_worker, log_dir, DEMO_TIMEOUT_S))
        return False
    client = RecallClient(
        conn,
        requests_key=settings.recall_requests_key,
        deadline_ms=2_000,
        shards=settings.recall_shards,
    )
    response = demo.ask_until_found(client, scopes, DEMO_TIMEOUT_S)
    print(demo.render(response))
    print(
        f"(the demo lives in its own workspace '{demo.DEMO_WORKSPACE}'; remove it with "
        f"`turngraph forget --scope workspace {demo.DEMO_WORKSPACE} --yes`)"
    )
    return bool(response.results)


def run_up(args: argparse.Namespace) -> int:
    settings = with_graph_option(Settings(), args)
    configure_logging(settings)
    stop_on_signals()  # SIGTERM and SIGINT alike, even when SIGINT came in ignored
    budget = LineBudget(settings.data_dir / "logs")
    try:
        with (
            _services(settings) as (env, services),
            _workers(_worker_processes(env, args.ingest_workers, budget)) as workers,
        ):
            live = settings if services is None else with_endpoints(settings, services.endpoints)
            found = run_demo(live, workers, log_dir=budget.log_dir)
            if args.exit_after_demo:
                return 0 if found else 1
            print("turngraph is running; press Ctrl-C (or send SIGTERM) to stop.", flush=True)
            servers = services.servers if services is not None else []
            Supervisor([*servers, *workers], budget).run()  # a child that dies comes back
    except StopSignal as stopped:
        log.info("stopped", signal=str(stopped))
    finally:
        budget.flush()
    return 0


def _at_least_one(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of at least 1, got {text!r}")
    return count


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = subparsers.add_parser(
        "up", help="run the whole system (embedded services, workers) and show a demo"
    )
    up.add_argument(
        "--exit-after-demo",
        action="store_true",
        help="stop after the demo (exit status 1 if nothing was recalled)",
    )
    up.add_argument(
        "--ingest-workers",
        type=_at_least_one,
        default=1,
        metavar="N",
        help="ingest worker processes to run (default 1)",
    )
    add_graph_option(up)
    up.set_defaults(handler=run_up)
