"""Readiness probe for containers: ``python -m turngraph.probe``.

Exit 0 when Redis and the graph answer with the process's own settings (``TURNGRAPH_*``),
1 otherwise, with one line on stderr saying which and why. Nothing is written anywhere.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import neo4j
import redis

from turngraph.settings import Settings

__all__ = ["PROBE_TIMEOUT_S", "check", "main"]

PROBE_TIMEOUT_S = 5.0
"""Per backend; the Kubernetes probe's own timeout is longer."""


def check(settings: Settings, timeout_s: float = PROBE_TIMEOUT_S) -> list[str]:
    """What is not reachable (empty when all is well). Needs configured URLs."""
    problems: list[str] = []
    if not (settings.redis_url and settings.graph_uri):
        return ["TURNGRAPH_REDIS_URL and TURNGRAPH_GRAPH_URI must be set"]
    conn = redis.Redis.from_url(
        settings.redis_url, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
    )
    try:
        conn.ping()
    except redis.RedisError as exc:
        problems.append(f"redis: {type(exc).__name__}")
    finally:
        conn.close()
    driver = neo4j.GraphDatabase.driver(
        settings.graph_uri,
        auth=(settings.graph_user, settings.graph_password.get_secret_value()),
        connection_timeout=timeout_s,
        connection_acquisition_timeout=timeout_s,
    )
    try:
        driver.verify_connectivity()
    except (neo4j.exceptions.Neo4jError, neo4j.exceptions.DriverError, OSError) as exc:
        problems.append(f"graph: {type(exc).__name__}")
    finally:
        driver.close()
    return problems


def main(argv: Sequence[str] | None = None) -> int:
    del argv  # no options
    problems = check(Settings())
    for problem in problems:
        print(f"not ready: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
