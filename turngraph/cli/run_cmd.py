"""``turngraph up``: the whole system on embedded defaults, with a demo that shows it working."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator

import redis
import structlog

from producers.recall_client import RecallClient
from producers.scopes import ScopeHasher
from turngraph import demo
from turngraph.clients import build_publisher
from turngraph.embedded import EmbeddedServices
from turngraph.embedded.redis_server import without_password
from turngraph.logs import configure_logging
from turngraph.settings import Settings

log = structlog.get_logger(__name__)

DEMO_TIMEOUT_S = 60.0
"""How long the demo waits for its conversation to become recallable."""


@contextlib.contextmanager
def _services(settings: Settings) -> Iterator[dict[str, str]]:
    """Embedded services when no URLs are configured; yields the children's environment."""
    if not settings.embedded:
        yield {}
        return
    with EmbeddedServices(settings.data_dir) as endpoints:
        print(f"embedded Redis  {without_password(endpoints.redis_url)}")
        print(f"embedded graph  {endpoints.graph_uri}")
        yield endpoints.as_env()


@contextlib.contextmanager
def _workers(env: dict[str, str], ingest_workers: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    kinds = ["recall", "maintenance"] + ["ingest"] * ingest_workers
    children = [
        subprocess.Popen(
            [sys.executable, "-m", "turngraph.cli", "worker", kind],
            env={"TURNGRAPH_LOG_LEVEL": "WARNING", **os.environ, **env},
        )
        for kind in kinds
    ]
    try:
        yield children
    finally:
        for child in children:
            child.send_signal(signal.SIGTERM)
        for child in children:
            try:
                child.wait(timeout=15)
            except subprocess.TimeoutExpired:
                child.kill()


def run_demo(settings: Settings) -> bool:
    assert settings.redis_url
    conn = redis.Redis.from_url(settings.redis_url, socket_timeout=5)
    scopes = demo.DemoScopes.hashed(ScopeHasher.for_data_dir(settings.data_dir))
    events = demo.demo_events(scopes)
    with build_publisher(settings) as publisher:
        for event in events:
            publisher.publish(event)
        publisher.flush(timeout_s=10)
        stats = publisher.stats()
    counts = {name: value for name, value in stats.as_dict().items() if value}
    print(f"published {len(events)} demo turns: {counts}")
    if not demo.wait_until_ingested(conn, events, DEMO_TIMEOUT_S):
        print(f"the demo turns were not ingested within {DEMO_TIMEOUT_S:.0f}s")
        return False
    client = RecallClient(conn, requests_key=settings.recall_requests_key, deadline_ms=2_000)
    response = demo.ask(client, scopes)
    print(demo.render(response))
    conn.close()
    return bool(response.results)


def run_up(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with _services(settings) as env, _workers(env, args.ingest_workers):
        live = settings.model_copy(
            update={"redis_url": env.get("TURNGRAPH_REDIS_URL", settings.redis_url)}
        )
        found = run_demo(live)
        if args.exit_after_demo:
            return 0 if found else 1
        print("turngraph is running; press Ctrl-C to stop.")
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    up = subparsers.add_parser(
        "up", help="run the whole system (embedded services, workers) and show a demo"
    )
    up.add_argument("--exit-after-demo", action="store_true", help="stop after the demo")
    up.add_argument(
        "--ingest-workers",
        type=int,
        default=1,
        metavar="N",
        help="ingest worker processes to run (default 1)",
    )
    up.set_defaults(handler=run_up)
