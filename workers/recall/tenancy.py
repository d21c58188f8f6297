"""What a recall replica checks and rewrites for tenants (docs/security.md): which reply
keys it may answer on, which request lists it pops, and a tenant's scope keys qualified
before the search and its event ids given back as the tenant named them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from turngraph.producers.request_reply import is_reply_key
from turngraph.schemas.recall import RecallRequest, RecallResult
from turngraph.schemas.tenants import (
    TENANTS_KEY,
    check_tenant,
    is_qualified,
    qualify,
    recall_reply_prefix,
    recall_requests_key,
    unqualify,
)

__all__ = [
    "SCOPE_FIELDS", "ReplyKeys", "foreign_scope_fields", "qualified", "tenant_request_keys",
    "unqualify_results",
]  # fmt: skip

SCOPE_FIELDS = ("session_id", "workspace", "user")
"""The scope keys of a request; a tenant's are qualified with the tenant before search."""


class ReplyKeys:
    """The keys a replica may answer on: the reply prefix (the tenant's, for a tenant's
    request) plus a request id (:func:`~turngraph.producers.request_reply.is_reply_key`)."""

    def __init__(self, reply_prefix: str) -> None:
        self._operator = reply_prefix

    def allowed(self, reply_to: object, tenant: str | None = None) -> bool:
        prefix = self._operator if tenant is None else recall_reply_prefix(tenant)
        return is_reply_key(reply_to, prefix)


def foreign_scope_fields(request: RecallRequest) -> list[str]:
    """The scope fields a tenant named in the qualified form (another tenant's keys)."""
    return [name for name in SCOPE_FIELDS if is_qualified(getattr(request, name) or "")]


def qualified(request: RecallRequest, tenant: str) -> RecallRequest:
    """The request with the tenant's scope keys in their stored (qualified) form."""
    return request.model_copy(
        update={
            name: qualify(tenant, getattr(request, name))
            for name in SCOPE_FIELDS
            if getattr(request, name)
        }
    )


def unqualify_results(results: Sequence[RecallResult], tenant: str) -> None:
    """Event ids back as the tenant named them (in place)."""
    for result in results:
        result.source_event_ids = [unqualify(tenant, e) for e in result.source_event_ids]


def tenant_request_keys(client: redis.Redis) -> list[str]:
    """Every registered tenant's request list (names that fail the check are skipped)."""
    names: Any = client.smembers(TENANTS_KEY)
    keys = []
    for name in sorted(n.decode() for n in names):
        try:
            keys.append(recall_requests_key(check_tenant(name)))
        except ValueError:
            continue
    return keys
