"""One retry layer for graph writes: transient errors and unique-constraint races.

The driver's managed transactions retry ``TransientError`` and lost connections. Under
concurrent MERGE on a unique key ArcadeDB raises ``ConstraintValidationFailed`` where
Neo4j would block; rerunning the whole transaction resolves it (the MERGE then matches).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import TypeVar

import neo4j
import neo4j.exceptions as neo4j_errors

from schemas.errors import BackendUnavailableError, TransientError

T = TypeVar("T")


class GraphRejectedError(TransientError):
    """The graph server refused a write with a client error (see ``run_write``)."""


CONSTRAINT_RACE_ATTEMPTS = 8
"""How often a transaction is rerun after losing a unique-key race."""


def run_write(
    driver: neo4j.Driver,
    database: str | None,
    work: Callable[[neo4j.ManagedTransaction], T],
) -> T:
    for attempt in range(CONSTRAINT_RACE_ATTEMPTS):
        try:
            with driver.session(database=database) as session:
                return session.execute_write(work)
        except neo4j_errors.ConstraintError:
            if attempt == CONSTRAINT_RACE_ATTEMPTS - 1:
                raise
            time.sleep(random.uniform(0.005, 0.05) * (attempt + 1))  # back off, then rerun
        except (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired) as exc:
            raise BackendUnavailableError("graph server unavailable") from exc
        except neo4j_errors.ClientError as exc:
            # Transient on purpose: while restarting, ArcadeDB answers valid writes with
            # Security.Unauthorized and Request.Invalid (seen in bench.chaos). Writes are
            # idempotent, and RQ's retry policy bounds the attempts; a real bug ends in
            # the failed registry after them, visible, instead of losing the turn at once.
            raise GraphRejectedError(f"graph rejected the write: {exc.code}") from exc
    raise AssertionError("unreachable")
