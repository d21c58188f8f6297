"""The graph boundary's errors: neo4j driver errors converted into ``schemas.errors`` types.

Every Bolt call of the graph package runs inside :func:`graph_errors`, so no raw driver
error leaves it. Transient: the server unreachable, the session lost, a Neo4j
``TransientError`` the driver's retry outlived, a unique-key race the write layer could
not settle, and ``Security.*`` / ``Request.*`` client errors, which ArcadeDB answers to
valid writes while it restarts. Permanent: a statement the server cannot run
(``Statement.*``), a schema or database client error, a value the driver cannot send.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import neo4j.exceptions as neo4j_errors

from turngraph.schemas.errors import BackendUnavailableError, PermanentError, TransientError

__all__ = [
    "TRANSIENT_CLIENT_CODES", "GraphQueryError", "GraphRejectedError", "convert", "graph_errors",
]  # fmt: skip


class GraphRejectedError(TransientError):
    """The graph server refused a valid request for now (restarting, busy, a lost race)."""


class GraphQueryError(PermanentError):
    """The graph server cannot run the request as sent; retrying cannot help."""


TRANSIENT_CLIENT_CODES = ("Neo.ClientError.Security.", "Neo.ClientError.Request.")
"""Client-error code prefixes treated as transient (ArcadeDB while it restarts)."""


def convert(exc: Exception, action: str) -> Exception:
    """The ``schemas.errors`` type for one driver error. ``action`` names what was being
    done (no data); the message carries the server's code, never parameters."""
    if isinstance(exc, neo4j_errors.ServiceUnavailable | neo4j_errors.SessionExpired):
        return BackendUnavailableError(f"graph server unavailable ({action})")
    if isinstance(exc, OSError):
        return BackendUnavailableError(f"graph server unreachable ({action})")
    if isinstance(exc, neo4j_errors.ConstraintError):
        return GraphRejectedError(f"graph write lost a unique-key race ({action})")
    if isinstance(exc, neo4j_errors.TransientError):
        return GraphRejectedError(f"graph server busy ({action}): {exc.code}")
    if isinstance(exc, neo4j_errors.ClientError):
        code = exc.code or ""
        if code.startswith(TRANSIENT_CLIENT_CODES):
            return GraphRejectedError(f"graph server refused ({action}): {code}")
        return GraphQueryError(f"graph server cannot run the request ({action}): {code}")
    if isinstance(exc, neo4j_errors.DatabaseError):
        return GraphRejectedError(f"graph server failed ({action}): {exc.code}")
    if isinstance(exc, neo4j_errors.Neo4jError):
        return GraphRejectedError(f"graph server error ({action}): {exc.code}")
    if isinstance(exc, neo4j_errors.DriverError):
        return GraphQueryError(f"graph driver error ({action}): {type(exc).__name__}")
    return exc


@contextmanager
def graph_errors(action: str) -> Iterator[None]:
    """Convert driver errors raised inside the block (``raise … from`` the original)."""
    try:
        yield
    except (neo4j_errors.Neo4jError, neo4j_errors.DriverError, OSError) as exc:
        converted = convert(exc, action)
        if converted is exc:
            raise
        raise converted from exc
