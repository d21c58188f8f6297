"""``turngraph up``: the whole system on embedded defaults, with a demo that shows it working."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import redis
import structlog

from turngraph import demo
from turngraph.cli.engine_option import add_graph_option, with_graph_option
from turngraph.embedded import EmbeddedServices
from turngraph.embedded.redis_server import without_password
from turngraph.lifecycle import (
    StopSignal,
    popen_tied_to_process,
    stop_on_signals,
    wait_for_stop,
)
from turngraph.logs import configure_logging
from turngraph.producers.connection import open_publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings
from turngraph.workers.recall.replica import process_is_ready

log = structlog.get_logger(__name__)

DEMO_TIMEOUT_S = 120.0
"""How long the demo waits for its conversation to be ingested (a loaded machine, a cold
JVM), for the recall worker to be ready, and then for the answer to name it."""

WORKER_STOP_TIMEOUT_S = 15.0
"""How long a worker may take to stop after SIGTERM before it is killed.

A ``kill -9`` of ``up`` gives nobody that time: the workers get SIGKILL (their
parent-death signal). The embedded servers they write to die in the same instant, so a
warm stop had nothing left to finish (an ingest batch embedding on a loaded machine ran
on for 50 s against dead servers); a batch they held stays in Redis for the next run."""


@contextlib.contextmanager
def _services(settings: Settings) -> Iterator[dict[str, str]]:
    """Embedded services when no URLs are configured; yields the children's environment."""
    if not settings.embedded:
        yield {}
        return
    with EmbeddedServices(settings.data_dir, settings.embedded_graph) as endpoints:
        print(f"data folder     {settings.data_dir}")
        print(f"embedded Redis  {without_password(endpoints.redis_url)}")
        print(f"embedded graph  {endpoints.graph_uri} ({endpoints.graph_engine})")
        if endpoints.graph_engine == "neo4j":
            print(f"Neo4j Browser   {endpoints.studio_url}")
        yield endpoints.as_env()


@contextlib.contextmanager
def _workers(env: dict[str, str], ingest_workers: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    kinds = ["recall", "maintenance"] + ["ingest"] * ingest_workers
    children: list[subprocess.Popen[bytes]] = []
    try:
        for kind in kinds:
            children.append(
                popen_tied_to_process(  # a kill -9 of `up` is a kill -9 of them
                    [sys.executable, "-m", "turngraph.cli", "worker", kind],
                    death_signal=signal.SIGKILL,
                    env={"TURNGRAPH_LOG_LEVEL": "WARNING", **os.environ, **env},
                )
            )
        yield children
    finally:
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=WORKER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


def run_demo(settings: Settings, recall_worker: subprocess.Popen[bytes]) -> bool:
    assert settings.redis_url
    conn = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
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
    try:
        if not demo.wait_until_ingested(conn, events, DEMO_TIMEOUT_S):
            print(f"the demo turns were not ingested within {DEMO_TIMEOUT_S:.0f}s")
            return False
        # The recall worker of this run may still be reading the graph, or behind the
        # change stream: wait until its own replica's heartbeat says the memories are
        # loaded and the stream applied as far as it reached once the turns were ingested.
        host, pid = socket.gethostname(), recall_worker.pid
        last: Any = conn.xrevrange(settings.changes_stream, count=1)
        applied = last[0][0].decode() if last else "0-0"
        if not demo.wait_for(
            lambda: process_is_ready(conn, host, pid, applied=applied),
            DEMO_TIMEOUT_S,
            lambda: recall_worker.poll() is None,
        ):
            print(f"the recall worker was not ready within {DEMO_TIMEOUT_S:.0f}s")
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
    finally:
        conn.close()


def run_up(args: argparse.Namespace) -> int:
    settings = with_graph_option(Settings(), args)
    configure_logging(settings)
    stop_on_signals()  # SIGTERM and SIGINT alike, even when SIGINT came in ignored
    try:
        with _services(settings) as env, _workers(env, args.ingest_workers) as children:
            live = settings.model_copy(
                update={"redis_url": env.get("TURNGRAPH_REDIS_URL", settings.redis_url)}
            )
            found = run_demo(live, recall_worker=children[0])
            if args.exit_after_demo:
                return 0 if found else 1
            print("turngraph is running; press Ctrl-C (or send SIGTERM) to stop.", flush=True)
            wait_for_stop()
    except StopSignal as stopped:
        log.info("stopped", signal=str(stopped))
    return 0


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
        type=int,
        default=1,
        metavar="N",
        help="ingest worker processes to run (default 1)",
    )
    add_graph_option(up)
    up.set_defaults(handler=run_up)
