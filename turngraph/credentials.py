"""Tenant credentials: Redis ACL users that can do what a tenant's producers do, no more.

``issue`` creates (or rotates) the ACL user ``tenant-<name>`` with the generated secret's
SHA-256 (the secret never reaches Redis), the key pattern ``~turngraph:t:<name>:*`` and
exactly :data:`schemas.tenants.PRODUCER_COMMANDS`, loads the functions those call, adds
the tenant to ``turngraph:tenants`` and persists the users (``ACL SAVE``, else ``CONFIG
REWRITE``, else says they live until a restart). ``revoke`` deletes the user and
persists. docs/security.md ("Operator steps").
"""

from __future__ import annotations

import hashlib
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import redis

from turngraph.producers.shard_push import load_shard_push
from turngraph.producers.tenant_inbox import load_inbox_function
from turngraph.schemas.shards import SHARD_ALIVE_PREFIX
from turngraph.schemas.tenants import (
    PRODUCER_COMMANDS,
    TENANTS_KEY,
    acl_user,
    check_new_tenant,
    check_tenant,
    tenant_prefix,
)

__all__ = [
    "SECRET_BYTES", "Issued", "acl_rules", "issue", "issued_tenants", "persist", "revoke",
    "write_private",
]  # fmt: skip

SECRET_BYTES = 32
"""Entropy of a generated tenant secret (``secrets.token_urlsafe``: 43 characters)."""


@dataclass(frozen=True)
class Issued:
    """A credential just issued; ``secret`` exists nowhere else (Redis keeps its hash)."""

    tenant: str
    user: str
    secret: str
    persisted: str
    """How the user was saved: ``acl_file``, ``config_file`` or ``not_persisted``."""

    def redis_url(self, server_url: str) -> str:
        """``server_url`` (host, port, database, scheme) with this credential in it."""
        parts = urlsplit(server_url)
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{quote(self.user, safe='')}:{quote(self.secret, safe='')}@{host}"
        return urlunsplit(parts._replace(netloc=netloc))

    def env_lines(self, server_url: str) -> str:
        """What a producer needs, as ``.env`` lines (Settings reads them)."""
        return f"TURNGRAPH_REDIS_URL={self.redis_url(server_url)}\nTURNGRAPH_TENANT={self.tenant}\n"


def acl_rules(tenant: str, secret: str) -> list[str]:
    """The ``ACL SETUSER`` arguments of ``tenant``'s user (``reset`` first: a re-issue
    rotates the secret and drops anything added by hand)."""
    digest = hashlib.sha256(secret.encode()).hexdigest()
    return [
        "reset",
        "on",
        f"#{digest}",
        f"~{tenant_prefix(tenant)}*",
        f"%R~{SHARD_ALIVE_PREFIX}*",  # which recall shards have a replica (no tenant data)
        "resetchannels",
        "-@all",
        *(f"+{command}" for command in PRODUCER_COMMANDS),
    ]


def persist(conn: redis.Redis) -> str:
    """Save the server's users: its ACL file, else its config file."""
    try:
        conn.execute_command("ACL", "SAVE")
        return "acl_file"
    except redis.ResponseError:
        pass
    try:
        conn.config_rewrite()
        return "config_file"
    except redis.ResponseError:
        return "not_persisted"


def issue(conn: redis.Redis, tenant: str) -> Issued:
    """Create or rotate ``tenant``'s credential on the operator's connection ``conn`` (a
    reserved name is refused: :func:`check_new_tenant`)."""
    tenant = check_new_tenant(tenant)
    secret = secrets.token_urlsafe(SECRET_BYTES)
    user = acl_user(tenant)
    load_inbox_function(conn)  # the scripts the credential may run (FCALL)
    load_shard_push(conn)
    conn.execute_command("ACL", "SETUSER", user, *acl_rules(tenant, secret))
    conn.sadd(TENANTS_KEY, tenant)
    return Issued(tenant=tenant, user=user, secret=secret, persisted=persist(conn))


def revoke(conn: redis.Redis, tenant: str) -> tuple[bool, str]:
    """Delete ``tenant``'s user; (whether it existed, how the change was persisted). The
    tenant's data and queued turns stay (workers still admit and serve what is there)."""
    deleted = int(conn.execute_command("ACL", "DELUSER", acl_user(check_tenant(tenant))))
    return deleted > 0, persist(conn)


def issued_tenants(conn: redis.Redis) -> dict[str, bool]:
    """Every tenant a credential was issued for, and whether its user still exists."""
    users = {u.decode() if isinstance(u, bytes) else u for u in conn.acl_users()}
    names = sorted(m.decode() for m in conn.smembers(TENANTS_KEY))  # type: ignore[union-attr]
    return {name: acl_user(name) in users for name in names if _valid(name)}


def _valid(name: str) -> bool:
    try:
        check_tenant(name)
    except ValueError:
        return False
    return True


def write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file ``path``, mode 600 from its creation (never over an
    existing file: a credential is not overwritten by accident)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
