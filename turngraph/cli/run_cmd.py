"""``turngraph up``: the whole system on embedded defaults, with a demo that shows it working.

It runs the embedded servers, the workers and the local endpoint (``turngraph endpoint``,
docs/endpoint.md) as supervised children."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import structlog

from turngraph import demo
from turngraph.cli.engine_option import add_graph_option, with_graph_option
from turngraph.embedded import EmbeddedServices, ServiceEndpoints
from turngraph.embedded.redis_server import without_password
from turngraph.embedded.services import SUPERVISE_EVERY_S
from turngraph.lifecycle import (
    StopSignal,
    pause,
    popen_tied_to_process,
    stop_on_signals,
)
from turngraph.logs import configure_logging
from turngraph.producers.connection import open_publisher
from turngraph.producers.recall_client import RecallClient
from turngraph.producers.scope_hints import ScopeHints
from turngraph.producers.scopes import ScopeHasher
from turngraph.settings import Settings
from turngraph.workers.ingest.markers import recorded_identity
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


RESTART_BACKOFF_S = (1.0, 60.0)
"""A worker that exits within :data:`STABLE_AFTER_S` of its start waits this long before
the next start, doubling from the first value up to the second (a crash loop costs one
start a minute at most); one that ran longer is started again at the next check."""

ENDPOINT = "endpoint"
"""The kind of ``up``'s child that serves the local endpoint (``turngraph endpoint``)."""

STABLE_AFTER_S = 30.0
"""A worker that ran this long before exiting is started again without waiting."""


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


@dataclass
class _Slot:
    """One worker process of ``up`` and when it may be started again."""

    kind: str
    child: subprocess.Popen[bytes]
    started: float
    backoff: float = RESTART_BACKOFF_S[0]
    not_before: float = 0.0
    """When a dead worker may start again; 0.0 until it is seen dead."""


class Workers:
    """``up``'s worker processes: started, started again when one exits, stopped."""

    def __init__(self, env: dict[str, str], ingest_workers: int) -> None:
        self.kinds = ["recall", "maintenance"] + ["ingest"] * ingest_workers + [ENDPOINT]
        self._env = {"TURNGRAPH_LOG_LEVEL": "WARNING", **os.environ, **env}
        # The endpoint finds the embedded services as the user's commands do (services.json),
        # so consent granted from a shell is the consent it checks.
        self._endpoint_env = {"TURNGRAPH_LOG_LEVEL": "WARNING", **os.environ}
        self._slots: list[_Slot] = []

    @property
    def children(self) -> list[subprocess.Popen[bytes]]:
        return [slot.child for slot in self._slots]

    def start(self) -> None:
        for kind in self.kinds:
            self._slots.append(_Slot(kind, self._spawn(kind), time.monotonic()))

    def _spawn(self, kind: str) -> subprocess.Popen[bytes]:
        command = ["endpoint"] if kind == ENDPOINT else ["worker", kind]
        return popen_tied_to_process(  # a kill -9 of `up` is a kill -9 of them
            [sys.executable, "-m", "turngraph.cli", *command],
            death_signal=signal.SIGKILL,
            env=self._endpoint_env if kind == ENDPOINT else self._env,
        )

    def restart_dead(self) -> list[str]:
        """Start again each worker that exited (after its back-off); returns their kinds."""
        restarted = []
        now = time.monotonic()
        for slot in self._slots:
            code = slot.child.poll()
            if code is None:
                continue
            if slot.not_before == 0.0:  # first seen dead
                crashed = now - slot.started < STABLE_AFTER_S
                wait_s = slot.backoff if crashed else 0.0
                slot.backoff = (
                    min(slot.backoff * 2, RESTART_BACKOFF_S[1]) if crashed else RESTART_BACKOFF_S[0]
                )
                slot.not_before = now + wait_s
                log.warning(
                    "worker_exited",
                    kind=slot.kind,
                    pid=slot.child.pid,
                    exit_code=code,
                    restart_in_s=wait_s,
                )
            if now < slot.not_before:
                continue
            slot.child = self._spawn(slot.kind)
            slot.started, slot.not_before = time.monotonic(), 0.0
            log.warning("worker_restarted", kind=slot.kind, pid=slot.child.pid)
            restarted.append(slot.kind)
        return restarted

    def stop(self) -> None:
        for child in self.children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        for child in self.children:
            try:
                child.wait(timeout=WORKER_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()


@contextlib.contextmanager
def _workers(env: dict[str, str], ingest_workers: int) -> Iterator[Workers]:
    workers = Workers(env, ingest_workers)
    try:
        workers.start()
        yield workers
    finally:
        workers.stop()


def supervise(services: EmbeddedServices | None, workers: Workers) -> None:
    """Until a stop signal: every :data:`SUPERVISE_EVERY_S`, start again the embedded
    servers (same port and credentials) and the workers that died."""
    while True:
        pause(SUPERVISE_EVERY_S)
        if services is not None:
            services.restart_dead()
        workers.restart_dead()


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
        with (
            _services(settings) as (env, services),
            _workers(env, args.ingest_workers) as workers,
        ):
            live = settings.model_copy(
                update={"redis_url": env.get("TURNGRAPH_REDIS_URL", settings.redis_url)}
            )
            found = run_demo(live, recall_worker=workers.children[0])
            if args.exit_after_demo:
                return 0 if found else 1
            print("turngraph is running; press Ctrl-C (or send SIGTERM) to stop.", flush=True)
            supervise(services, workers)
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
