"""The graph write's retry layer, and why it is the only one below RQ.

Retries, one layer per failure and boundary (decided for issue 9):

- **Inside a transaction, the driver.** ``session.execute_write`` reruns the transaction
  function on what the driver calls retryable: Neo4j ``TransientError`` (deadlock, lock
  timeout) and a lost connection, with jittered back-off from 20 ms
  (``turngraph.clients.GRAPH_INITIAL_RETRY_DELAY_S``) within its ``max_transaction_retry_time``.
- **A unique-key race, here.** Under concurrent MERGE on one key ArcadeDB raises
  ``ConstraintValidationFailed`` (a client error, which the driver never retries) where
  Neo4j would block; rerunning the whole transaction settles it, because the MERGE then
  matches. :func:`run_write` reruns it, and only it, up to ``CONSTRAINT_RACE_ATTEMPTS``.
- **Across a job, RQ.** Whatever is still transient when the transaction gives up (the
  server restarting for longer than the driver's window, a race lost eight times) leaves
  as a ``schemas.errors.TransientError`` and RQ's ``Retry`` (8 attempts, 1 s … 5 min, set
  at enqueue) runs the job again. A permanent error (a statement the server cannot run)
  is not retried by any layer.

Every driver error is converted here (:mod:`workers.graph.errors`), ``raise … from``.
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
