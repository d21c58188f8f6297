"""One line for a command that failed: what went wrong and what to do, never a traceback.

Messages name the backend and the error type only: a driver's own message can quote a
statement's parameters, and a statement's parameters can hold chat text.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
from typing import Any

from turngraph.schemas.errors import ErrorCode, TurngraphError

__all__ = [
    "DATA_DIR_HINT", "START_HINT", "START_REDIS_HINT", "describe_failure", "describe_os_error",
    "report_failure", "report_no_redis",
]  # fmt: skip

START_HINT = (
    "start the services with `turngraph up` or set TURNGRAPH_REDIS_URL / TURNGRAPH_GRAPH_URI"
)


def describe_failure(exc: BaseException) -> str:
    """What a person reads when a command fails with ``exc``."""
    # Imported on failure only: every command (``--help`` too) starts without the drivers.
    import neo4j.exceptions
    import pydantic
    import redis

    if isinstance(exc, TurngraphError):
        return f"error: {exc}"
    if isinstance(exc, redis.AuthenticationError | redis.exceptions.NoPermissionError):
        return "error: Redis refused our credentials; check TURNGRAPH_REDIS_URL"
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return f"error: Redis is not reachable ({type(exc).__name__}); {START_HINT}"
    if isinstance(exc, redis.RedisError):
        return f"error: Redis answered {type(exc).__name__}"
    if isinstance(exc, neo4j.exceptions.AuthError):
        return "error: the graph server refused our credentials; check TURNGRAPH_GRAPH_USER"
    if isinstance(exc, neo4j.exceptions.ServiceUnavailable | neo4j.exceptions.SessionExpired):
        return f"error: the graph server is not reachable; {START_HINT}"
    if isinstance(exc, neo4j.exceptions.Neo4jError) and exc.code:
        # the server's status code names the cause; its message can quote parameters
        return f"error: the graph server answered {type(exc).__name__} ({exc.code})"
    if isinstance(exc, neo4j.exceptions.Neo4jError | neo4j.exceptions.DriverError):
        return f"error: the graph server answered {type(exc).__name__}"
    if isinstance(exc, pydantic.ValidationError):
        return "error: " + "; ".join(_invalid_settings(exc))
    if isinstance(exc, OSError):
        return "error: " + describe_os_error(exc)
    return (
        f"internal error: {type(exc).__name__}; "
        "rerun with TURNGRAPH_TRACEBACK=1 for details and report it"
    )


def _invalid_settings(exc: Any) -> list[str]:
    """One clause per invalid value: where it came from and what is expected (pydantic's
    message; never the value itself, which can be a password or chat text)."""
    settings = exc.title == "Settings"
    clauses = []
    for error in exc.errors(include_url=False, include_input=False):
        field = ".".join(str(part) for part in error["loc"]) or "value"
        name = f"TURNGRAPH_{field.upper()}" if settings else field
        clauses.append(f"invalid {name}: {error['msg'].removeprefix('Value error, ')}")
    return clauses


def describe_os_error(exc: OSError) -> str:
    """A filesystem or system error with the path it concerns and what to check."""
    what = exc.strerror or type(exc).__name__
    if exc.filename is None:
        return f"{type(exc).__name__} ({what})"
    path = os.fsdecode(exc.filename)
    if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
        return f"{path}: {what}; give your user write access to it, or {DATA_DIR_HINT}"
    if _in_data_dir(path):
        return f"{path}: {what}; the data folder cannot be used there: {DATA_DIR_HINT}"
    if isinstance(exc, FileNotFoundError):
        return f"{path}: {what}; check the path"
    return f"{path}: {what}"


DATA_DIR_HINT = "set TURNGRAPH_DATA_DIR to a folder you own"


def _in_data_dir(path: str) -> bool:
    """Whether ``path`` is the data folder or in it (as configured, without building the
    settings, which may be what failed)."""
    from pathlib import Path

    from turngraph.settings import default_data_dir

    configured = os.environ.get("TURNGRAPH_DATA_DIR", "").strip()
    data_dir = Path(configured).expanduser().absolute() if configured else default_data_dir()
    return Path(path).absolute().is_relative_to(data_dir)


START_REDIS_HINT = "start it with `turngraph up` or set TURNGRAPH_REDIS_URL"


def report_no_redis(args: argparse.Namespace) -> int:
    """:func:`report_failure` for a command that found no Redis to talk to."""
    return report_failure(
        args,
        "BACKEND_UNAVAILABLE",
        "no Redis configured and no embedded services running",
        START_REDIS_HINT,
    )


def report_failure(args: argparse.Namespace, code: str, message: str, remediation: str) -> int:
    """A command's typed failure: the bridge's error reply on stdout with ``--json``, else
    one line on stderr; exit status 1. ``code`` is an :class:`ErrorCode` value."""
    if getattr(args, "json", False):
        from turngraph.schemas.bridge_common import error_reply  # pydantic: on failure only

        reply = error_reply(ErrorCode(code), message, remediation)
        print(json.dumps(reply.model_dump(mode="json", exclude_none=True)))
    else:
        print(f"error: {message} ({remediation})", file=sys.stderr)
    return 1
