"""``turngraph doctor [--smoke] [--json]``: is everything turngraph needs there and healthy?

One line per check; a failing one says what is wrong and the fix; exit 1 on any failure.
``--smoke`` also sends one marker turn through the whole path (docs/operations.md)."""

from __future__ import annotations

import argparse
import json

import redis

from turngraph.cli.failures import DATA_DIR_HINT
from turngraph.clients import with_endpoints
from turngraph.doctor.checks import Check, fail, failed, skip
from turngraph.doctor.marker_checks import check_markers_agree
from turngraph.doctor.redis_checks import (
    START_REDIS,
    check_queue,
    check_replicas,
    check_server,
    check_worker_config,
    connect,
)
from turngraph.doctor.service_checks import START_GRAPH, check_embeddings, check_graph, check_llm
from turngraph.doctor.smoke import run_smoke
from turngraph.embedded.redis_server import without_password
from turngraph.embedded.services import read_endpoints
from turngraph.logs import configure_logging
from turngraph.settings import Settings

__all__ = ["DEFAULT_SMOKE_TIMEOUT_S", "register", "run_checks", "run_doctor"]

DEFAULT_SMOKE_TIMEOUT_S = 60.0


def run_checks(settings: Settings, *, smoke: bool, smoke_timeout_s: float) -> list[Check]:
    """Every check, in order; those that depend on a failed one are skipped."""
    if settings.data_dir.exists() and not settings.data_dir.is_dir():
        return [
            fail(
                "data",
                f"the data folder {settings.data_dir} is a file, not a folder",
                f"move that file away, or {DATA_DIR_HINT}",
            )
        ]
    if not (settings.redis_url and settings.graph_uri) and settings.embedded:
        running = read_endpoints(settings.data_dir)
        if running is not None:
            settings = with_endpoints(settings, running)
    checks: list[Check] = []
    redis_up = False
    if settings.redis_url:
        conn = connect(settings.redis_url)
        try:
            server, redis_up = check_server(conn, without_password(settings.redis_url))
            checks += server
            if redis_up:
                checks += check_queue(conn, settings)
                checks += check_replicas(conn, settings)
                checks.append(check_worker_config(conn, settings))
        except redis.RedisError as exc:
            checks.append(fail("redis", f"stopped answering ({type(exc).__name__})", START_REDIS))
            redis_up = False
        finally:
            conn.close()
    else:
        checks.append(fail("redis", "not configured and no embedded services running", START_REDIS))
    graph_up = False
    if settings.graph_uri:
        graph = check_graph(settings)
        graph_up = not failed(graph)
        checks += graph
        if redis_up and graph_up:
            checks.append(check_markers_agree(settings))
    else:
        checks.append(fail("graph", "not configured and no embedded services running", START_GRAPH))
    checks.append(check_llm(settings))
    checks.append(check_embeddings(settings))
    if smoke:
        if failed(checks) or not (redis_up and graph_up):
            checks.append(skip("smoke", "not run: fix the failures above first"))
        else:
            checks.append(run_smoke(settings, smoke_timeout_s))
    return checks


def run_doctor(args: argparse.Namespace) -> int:
    settings = Settings()
    configure_logging(settings.model_copy(update={"log_level": "ERROR"}))  # stderr, quiet
    checks = run_checks(settings, smoke=args.smoke, smoke_timeout_s=args.smoke_timeout)
    healthy = not failed(checks)
    if args.json:
        print(json.dumps({"success": healthy, "checks": [c.as_dict() for c in checks]}))
    else:
        width = max(len(check.name) for check in checks)
        for check in checks:
            print(check.line(width))
        print("healthy" if healthy else "NOT healthy: fix the FAIL lines above")
    return 0 if healthy else 1


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = subparsers.add_parser(
        "doctor",
        help="check Redis, the graph, the LLM and embedding endpoints, the queue and the "
        "workers; exit 1 on any failure",
    )
    doctor.add_argument(
        "--smoke",
        action="store_true",
        help="also publish a marker turn (doctor-only workspace), wait until it is "
        "recalled, then forget it",
    )
    doctor.add_argument(
        "--smoke-timeout",
        type=float,
        default=DEFAULT_SMOKE_TIMEOUT_S,
        metavar="S",
        help=f"how long --smoke waits for the marker (default {DEFAULT_SMOKE_TIMEOUT_S:.0f})",
    )
    doctor.add_argument("--json", action="store_true", help="one JSON object (for editors)")
    doctor.set_defaults(handler=run_doctor)
