"""Tenants: who may publish into and recall from which keys (SPEC §8).

A tenant's producers hold one Redis ACL user that reaches only ``turngraph:t:<tenant>:``
keys and the commands our producer code runs there (:data:`PRODUCER_COMMANDS`); trusted
workers on the operator's credential do the rest. A worker qualifies the scope keys and
event ids it takes from a tenant key (``t-<tenant>-<key>``), so tenants never share a
scope, an event id or a duplicate marker. docs/security.md ("Tenants").
"""

from __future__ import annotations

import re

__all__ = [
    "ACL_USER_PREFIX", "PRODUCER_COMMANDS", "QUALIFIED_PREFIX", "RESERVED_TENANTS", "TENANTS_KEY",
    "TENANT_KEY_PREFIX", "TENANT_PATTERN", "InvalidTenantError", "acl_user", "check_new_tenant",
    "check_tenant", "inbox_key",
    "inbox_stats_key", "inbox_wake_key", "is_qualified", "qualify", "recall_reply_prefix",
    "recall_requests_key", "tenant_of_key", "tenant_prefix", "unqualify",
]  # fmt: skip

TENANT_PATTERN = r"[a-z0-9]{1,32}"
"""A tenant name: lower-case letters and digits, so that it can sit inside keys, ACL user
names and qualified ids without any separator of its own."""

_TENANT = re.compile(TENANT_PATTERN)

RESERVED_TENANTS = frozenset({"operator"})
"""Names no credential is issued for: the operator's admission lists are
``turngraph:admission:operator:<queue>`` and a tenant's ``turngraph:admission:<tenant>``
then ``:1`` to ``:7`` (``schemas/keys.py``), so a tenant named ``operator`` would share
lists with an operator queue named ``1`` to ``7``."""

TENANTS_KEY = "turngraph:tenants"
"""Set of every tenant a credential was issued for; workers serve these."""

TENANT_KEY_PREFIX = "turngraph:t:"
"""Every key of a tenant starts with this, its name and ``:``."""

ACL_USER_PREFIX = "tenant-"
"""A tenant's Redis ACL user is this plus its name."""

QUALIFIED_PREFIX = re.compile(r"t-" + TENANT_PATTERN + "-")
"""The start of a tenant-qualified scope key or event id; producers of a tenant may not
name such keys themselves."""

PRODUCER_COMMANDS: tuple[str, ...] = (
    "fcall", "rpush", "lpop", "llen", "lpush", "ltrim", "hincrby", "hgetall", "expire", "blpop",
    "zcount", "ping", "client|setinfo", "client|setname",
)  # fmt: skip
"""Everything a tenant's producer runs: the inbox function (``FCALL``; inside it ``LLEN``,
``RPUSH``, ``LPOP``, ``HINCRBY``, ``LPUSH``, ``LTRIM``), the stats read (``HGETALL``,
``LLEN``), a recall (``RPUSH``, ``EXPIRE``, ``BLPOP``; when recall is sharded ``FCALL``
of the shard push, inside it ``ZCOUNT`` of the shards' replica claims, read-only, then
``RPUSH`` and ``EXPIRE``), and redis-py's connection set-up.
Nothing that runs code the caller supplies (``EVAL*``, ``SCRIPT``, ``FUNCTION LOAD``): a
busy loop of a tenant would stop Redis for everyone (issue 26). Functions run with the
caller's permissions (no "security definer"), so a producer that bypasses the function can
do no more than it does: all on its own keys."""


class InvalidTenantError(ValueError):
    """A tenant name outside :data:`TENANT_PATTERN`."""


def check_tenant(name: str) -> str:
    """``name`` if it is a valid tenant name; :class:`InvalidTenantError` otherwise."""
    if not isinstance(name, str) or not _TENANT.fullmatch(name):
        raise InvalidTenantError("tenant: expected 1-32 lower-case letters or digits")
    return name


def check_new_tenant(name: str) -> str:
    """``name`` if a credential may be issued for it: :func:`check_tenant`, and not one of
    :data:`RESERVED_TENANTS` (a tenant of that name issued before is still served)."""
    if check_tenant(name) in RESERVED_TENANTS:
        raise InvalidTenantError(f"tenant: {name!r} is reserved for the operator's own keys")
    return name


def tenant_prefix(tenant: str) -> str:
    """The prefix of every key of ``tenant`` (its ACL key pattern without the ``*``)."""
    return f"{TENANT_KEY_PREFIX}{check_tenant(tenant)}:"


def acl_user(tenant: str) -> str:
    """The Redis ACL user name of ``tenant``'s producers."""
    return ACL_USER_PREFIX + check_tenant(tenant)


def inbox_key(tenant: str) -> str:
    """The tenant's bounded inbox: TurnEvent JSON, oldest first."""
    return tenant_prefix(tenant) + "inbox"


def inbox_stats_key(tenant: str) -> str:
    """Counters of the tenant's inbox (the bounded queue's counters, per tenant)."""
    return tenant_prefix(tenant) + "stats"


def inbox_wake_key(tenant: str) -> str:
    """A one-element list the inbox script pushes to: admission block-pops it."""
    return tenant_prefix(tenant) + "wake"


def recall_requests_key(tenant: str) -> str:
    """The tenant's recall request list."""
    return tenant_prefix(tenant) + "recall:requests"


def recall_reply_prefix(tenant: str) -> str:
    """Prefix of the tenant's per-request recall reply keys."""
    return tenant_prefix(tenant) + "recall:reply:"


def tenant_of_key(key: str) -> str | None:
    """The tenant whose key ``key`` is, or None for a key outside every tenant."""
    if not key.startswith(TENANT_KEY_PREFIX):
        return None
    name = key[len(TENANT_KEY_PREFIX) :].partition(":")[0]
    return name if _TENANT.fullmatch(name) else None


def qualify(tenant: str, key: str) -> str:
    """``key`` (a scope key or event id) as stored for ``tenant``."""
    return f"t-{check_tenant(tenant)}-{key}"


def unqualify(tenant: str, key: str) -> str:
    """A stored key of ``tenant`` as its producers named it (other keys unchanged)."""
    prefix = f"t-{tenant}-"
    return key[len(prefix) :] if key.startswith(prefix) else key


def is_qualified(key: str) -> bool:
    """True for a key in the tenant-qualified form (``t-<tenant>-…``)."""
    return QUALIFIED_PREFIX.match(key) is not None
