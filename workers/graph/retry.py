"""The graph write's retry layer, and why it is the only one below RQ.

The driver reruns a transaction on what it calls retryable; :func:`run_write` reruns two
failures the driver never retries, both of a write racing another (every write here is
idempotent, so a rerun is safe):

- a lost unique-key race (ArcadeDB's ``ConstraintValidationFailed``, a client error), up
  to ``CONSTRAINT_RACE_ATTEMPTS``;
- a server-side ``DatabaseError``, up to ``DATABASE_ERROR_ATTEMPTS``: ArcadeDB 26.10's
  engine can fail a read of a multi-page record that another transaction is rewriting
  (a torn read it reports as a broken chunk chain, over Bolt ``UnknownError``; the
  database checks clean afterwards and the same read succeeds).

Each rerun is logged (``graph_write_rerun``: the action, the server's code, the attempt;
no data), and so is each of the driver's own (``graph_write_retried``: the action and the
attempt; the driver logs the server's message beside it), so write conflicts between
workers are counted, not only absorbed. What is still transient leaves as
``schemas.errors.TransientError`` for RQ's ``Retry``. Every driver error is converted here
(:mod:`workers.graph.errors`). The layers: docs/architecture.md ("Delivery").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import neo4j
import neo4j.exceptions as neo4j_errors
import structlog

from turngraph.workers.graph.errors import convert

__all__ = [
    "CONSTRAINT_RACE_ATTEMPTS", "CONSTRAINT_RACE_BACKOFF_S", "DATABASE_ERROR_ATTEMPTS",
    "RETRIED_EVENT", "run_write",
]  # fmt: skip

log = structlog.get_logger(__name__)

T = TypeVar("T")

CONSTRAINT_RACE_ATTEMPTS = 8
"""How often a transaction is run in all when it keeps losing a unique-key race."""

CONSTRAINT_RACE_BACKOFF_S = (0.005, 0.05)
"""Random pause before a rerun, times the attempt number (the racing writer commits)."""

DATABASE_ERROR_ATTEMPTS = 3
"""How often a transaction is run in all when the server keeps failing it with a
``DatabaseError`` (a lasting one then goes to RQ's ``Retry`` as transient)."""


RETRIED_EVENT = "graph_write_retried"
"""The log event of each rerun the driver does itself (``bench.ingest`` counts them)."""


def run_write(
    driver: neo4j.Driver,
    database: str | None,
    work: Callable[[neo4j.ManagedTransaction], T],
    *,
    action: str = "write",
) -> T:
    """Run ``work`` in one managed write transaction (see the module docstring)."""
    database_errors = 0
    for attempt in range(1, CONSTRAINT_RACE_ATTEMPTS + 1):
        try:
            with driver.session(database=database) as session:
                return session.execute_write(_counted(work, action))
        except neo4j_errors.ConstraintError as exc:
            if attempt == CONSTRAINT_RACE_ATTEMPTS:
                raise convert(exc, action) from exc
            _pause_before_rerun(exc, action, attempt)
        except neo4j_errors.DatabaseError as exc:
            database_errors += 1
            if database_errors == DATABASE_ERROR_ATTEMPTS or attempt == CONSTRAINT_RACE_ATTEMPTS:
                raise convert(exc, action) from exc
            _pause_before_rerun(exc, action, attempt)
        except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
            raise convert(exc, action) from exc
    raise AssertionError("unreachable")


def _counted(
    work: Callable[[neo4j.ManagedTransaction], T], action: str
) -> Callable[[neo4j.ManagedTransaction], T]:
    """``work``, logging each call after the first: the driver reran the transaction (a
    deadlock or another transient failure it retries itself)."""
    calls = 0

    def run(tx: neo4j.ManagedTransaction) -> T:
        nonlocal calls
        calls += 1
        if calls > 1:
            log.warning(RETRIED_EVENT, action=action, attempt=calls)
        return work(tx)

    return run


def _pause_before_rerun(exc: neo4j_errors.Neo4jError, action: str, attempt: int) -> None:
    log.info("graph_write_rerun", action=action, code=exc.code, attempt=attempt)
    time.sleep(random.uniform(*CONSTRAINT_RACE_BACKOFF_S) * attempt)
