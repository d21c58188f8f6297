"""``turngraph credentials issue|revoke|list``: tenant credentials, for operators.

Runs on the operator's credential (``TURNGRAPH_REDIS_URL`` with the admin password, or
the embedded services). The secret of an issued credential is shown once: written to a
new file of mode 600 (``--out``), or printed on stdout; it is never an argument, never
logged, and Redis keeps only its SHA-256.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import redis

from turngraph.cli.failures import report_failure
from turngraph.clients import producer_redis_url
from turngraph.credentials import issue, issued_tenants, revoke, write_private
from turngraph.schemas.tenants import InvalidTenantError
from turngraph.settings import Settings, url_problem

__all__ = ["NOT_PERSISTED_HINT", "register", "run_issue", "run_list", "run_revoke"]

NOT_PERSISTED_HINT = (
    "the server has neither an ACL file nor a config file to save users to: the "
    "credential ends when Redis restarts (run Redis with `aclfile`, as ops/ does)"
)


def _connect() -> tuple[redis.Redis | None, str | None]:
    settings = Settings()
    if settings.tenant:
        return None, None  # a tenant credential cannot manage credentials
    url = producer_redis_url(settings)
    if url is None:
        return None, None
    return redis.Redis.from_url(url, socket_timeout=5.0, socket_connect_timeout=1.0), url


def _redis_url(value: str) -> str:
    """``--producer-url``: refused as a usage error when redis-py could not use it."""
    problem = url_problem("redis_url", value)
    if problem:
        raise argparse.ArgumentTypeError(problem)
    return value.strip()


def _unavailable(args: argparse.Namespace) -> int:
    return report_failure(
        args,
        "BACKEND_UNAVAILABLE",
        "no operator Redis: TURNGRAPH_REDIS_URL is unset and no embedded services run "
        "(or TURNGRAPH_TENANT is set: a tenant cannot manage credentials)",
        "run as the operator: `turngraph up`, or the admin URL in TURNGRAPH_REDIS_URL",
    )


def _on_redis(
    args: argparse.Namespace, work: Callable[[redis.Redis, str], int], tenant_fix: str = ""
) -> int:
    """``work`` on the operator's Redis and its URL; no operator Redis, a Redis error or a
    tenant name :class:`InvalidTenantError` refuses (``tenant_fix`` says what to change)
    end in one typed failure."""
    conn, url = _connect()
    if conn is None or url is None:
        return _unavailable(args)
    try:
        return work(conn, url)
    except InvalidTenantError as exc:
        return report_failure(args, "INVALID_REQUEST", str(exc), tenant_fix)
    except redis.RedisError as exc:
        return report_failure(args, "BACKEND_UNAVAILABLE", f"Redis: {type(exc).__name__}", "retry")
    finally:
        conn.close()


def run_issue(args: argparse.Namespace) -> int:
    def work(conn: redis.Redis, url: str) -> int:
        out: Path | None = args.out
        if out is not None and out.exists():
            return report_failure(args, "INVALID_REQUEST", f"{out} exists", "name a new file")
        issued = issue(conn, args.tenant)
        env = issued.env_lines(args.producer_url or url)
        if issued.persisted == "not_persisted":
            print(f"warning: {NOT_PERSISTED_HINT}", file=sys.stderr)
        if out is not None:
            write_private(out, env)
            print(f"issued {issued.user}: the producer settings are in {out} (mode 600)")
        else:
            print(f"# issued {issued.user}; shown once, keep it secret", file=sys.stderr)
            sys.stdout.write(env)
        return 0

    return _on_redis(args, work, "e.g. `turngraph credentials issue acme`")


def run_revoke(args: argparse.Namespace) -> int:
    def work(conn: redis.Redis, _url: str) -> int:
        existed, persisted = revoke(conn, args.tenant)
        if not existed:
            return report_failure(
                args, "NOT_FOUND", f"no credential for {args.tenant}", "see `list`"
            )
        if persisted == "not_persisted":
            print(f"warning: {NOT_PERSISTED_HINT}", file=sys.stderr)
        print(f"revoked tenant-{args.tenant}; its clients were disconnected")
        return 0

    return _on_redis(args, work, "name an issued tenant")


def run_list(args: argparse.Namespace) -> int:
    def work(conn: redis.Redis, _url: str) -> int:
        tenants = issued_tenants(conn)
        if args.json:
            print(json.dumps({"success": True, "tenants": tenants}))
        else:
            for name, active in tenants.items():
                print(f"{name:<33}{'active' if active else 'revoked'}")
        return 0

    return _on_redis(args, work)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    creds = subparsers.add_parser(
        "credentials", help="tenant credentials for producers (operators: issue, revoke, list)"
    )
    actions = creds.add_subparsers(dest="credentials_action", required=True)
    issue_cmd = actions.add_parser(
        "issue", help="create or rotate a tenant's Redis user; the secret is shown once"
    )
    issue_cmd.add_argument("tenant", help="1-32 lower-case letters or digits")
    issue_cmd.add_argument(
        "--out", type=Path, help="write the producer's settings to this new file (mode 600)"
    )
    issue_cmd.add_argument(
        "--producer-url",
        type=_redis_url,
        help="the Redis URL producers connect to (default: this one); credentials in it "
        "are replaced",
    )
    issue_cmd.set_defaults(handler=run_issue)
    revoke_cmd = actions.add_parser("revoke", help="delete a tenant's Redis user")
    revoke_cmd.add_argument("tenant", help="the tenant whose user to delete")
    revoke_cmd.set_defaults(handler=run_revoke)
    list_cmd = actions.add_parser("list", help="tenants and whether their user exists")
    list_cmd.add_argument("--json", action="store_true", help="one JSON object")
    list_cmd.set_defaults(handler=run_list)
