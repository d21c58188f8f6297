"""The graph write's retry layer, and why it is the only one below RQ.

The driver reruns a transaction on what it calls retryable; :func:`run_write` reruns only
a lost unique-key race (ArcadeDB's ``ConstraintValidationFailed``, a client error the
driver never retries), up to ``CONSTRAINT_RACE_ATTEMPTS``; what is still transient leaves
as ``schemas.errors.TransientError`` for RQ's ``Retry``. Every driver error is converted
here (:mod:`workers.graph.errors`). The layers: docs/architecture.md ("Delivery").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import neo4j
import neo4j.exceptions as neo4j_errors

from turngraph.workers.graph.errors import convert

__all__ = ["CONSTRAINT_RACE_ATTEMPTS", "CONSTRAINT_RACE_BACKOFF_S", "run_write"]

T = TypeVar("T")

CONSTRAINT_RACE_ATTEMPTS = 8
"""How often a transaction is run in all when it keeps losing a unique-key race."""

CONSTRAINT_RACE_BACKOFF_S = (0.005, 0.05)
"""Random pause before a rerun, times the attempt number (the racing writer commits)."""


def run_write(
    driver: neo4j.Driver,
    database: str | None,
    work: Callable[[neo4j.ManagedTransaction], T],
    *,
    action: str = "write",
) -> T:
    """Run ``work`` in one managed write transaction (see the module docstring)."""
    for attempt in range(1, CONSTRAINT_RACE_ATTEMPTS + 1):
        try:
            with driver.session(database=database) as session:
                return session.execute_write(work)
        except neo4j_errors.ConstraintError as exc:
            if attempt == CONSTRAINT_RACE_ATTEMPTS:
                raise convert(exc, action) from exc
            time.sleep(random.uniform(*CONSTRAINT_RACE_BACKOFF_S) * attempt)
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise convert(exc, action) from exc
    raise AssertionError("unreachable")
